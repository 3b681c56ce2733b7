// The prelude of every call: it runs in a fresh engine before the tool's
// code, takes the bridge functions lathe registered off the global object
// (so that the tool reaches the host only through ctx and console), and
// keeps its own copies of the built-ins it uses, so that a tool that
// replaces JSON or Promise.prototype.then changes its own call's values and
// nothing lathe reads.
(function () {
  "use strict";
  const g = globalThis;
  const hostCall = g.__lathe_host, settle = g.__lathe_settle, out = g.__lathe_console;
  delete g.__lathe_host;
  delete g.__lathe_settle;
  delete g.__lathe_console;
  const stringify = JSON.stringify, parse = JSON.parse, apply = Reflect.apply;
  const then = Promise.prototype.then, resolve = Promise.resolve.bind(Promise);
  const ErrorCtor = Error, Str = String, U8 = Uint8Array, from = Array.from;
  const freeze = Object.freeze, defineProperty = Object.defineProperty;
  const isArray = Array.isArray, join = Array.prototype.join, map = Array.prototype.map;

  function host(method, params) {
    const r = parse(hostCall(method, stringify(params)));
    if (r.e) {
      const err = new ErrorCtor(r.e.message);
      err.code = r.e.code;
      throw err;
    }
    return r.r;
  }
  function show(v) {
    if (typeof v === "string") return v;
    if (v instanceof ErrorCtor) return Str(v.stack ? v + "\n" + v.stack : v);
    try {
      const s = stringify(v);
      return s === undefined ? Str(v) : s;
    } catch (e) {
      return Str(v);
    }
  }
  function line(args) {
    return apply(join, apply(map, args, [show]), [" "]);
  }
  function bytes(data) {
    if (typeof data === "string") return { text: data };
    if (data instanceof U8 || isArray(data)) return { bytes: from(data) };
    if (data instanceof ArrayBuffer) return { bytes: from(new U8(data)) };
    return { text: Str(data) };
  }
  const con = {};
  for (const level of ["log", "info", "warn", "error", "debug"]) {
    con[level] = function (...args) { out(level, line(args)); };
  }
  defineProperty(g, "console", { value: freeze(con), writable: true, configurable: true });

  function makeCtx(info) {
    const fs = freeze({
      readFile(path) { return host("readFile", { path: Str(path) }); },
      readBytes(path) { return new U8(host("readBytes", { path: Str(path) })); },
      writeFile(path, data, opts) {
        const p = bytes(data);
        p.path = Str(path);
        p.append = !!(opts && opts.append);
        p.makeDirs = !!(opts && opts.makeDirs);
        return host("writeFile", p);
      },
      list(path) { return host("list", { path: Str(path === undefined ? "." : path) }); },
      stat(path) { return host("stat", { path: Str(path) }); },
      remove(path, opts) { return host("remove", { path: Str(path), recursive: !!(opts && opts.recursive) }); },
    });
    return freeze({
      fs,
      fetch(url, opts) {
        const p = { url: Str(url) };
        if (opts && opts.method !== undefined) p.method = Str(opts.method);
        if (opts && opts.headers) p.headers = opts.headers;
        if (opts && opts.body !== undefined) p.body = bytes(opts.body);
        return host("fetch", p);
      },
      run(argv, opts) {
        const p = { argv: isArray(argv) ? from(argv, Str) : [Str(argv)] };
        if (opts && opts.stdin !== undefined) p.stdin = bytes(opts.stdin);
        if (opts && opts.dir !== undefined) p.dir = Str(opts.dir);
        return host("run", p);
      },
      env(name) { return host("env", { name: Str(name) }); },
      log(message, level) { host("log", { message: Str(message), level: level === undefined ? "" : Str(level) }); },
      progress(progress, total, message) {
        host("progress", { progress: +progress, total: total === undefined ? 0 : +total, message: message === undefined ? "" : Str(message) });
      },
      ask(q) { return host("ask", q === undefined ? null : q); },
      callId: info.callId,
      root: info.root,
      options: info.options,
    });
  }

  function failure(e) {
    // The engine throws null when it runs out of memory so badly that it
    // cannot make the error; lathe says so.
    if (e === null) return settle("null", "");
    let name = "Error", message, stack = "";
    try {
      if (e instanceof ErrorCtor) {
        name = Str(e.name);
        message = Str(e.message);
        stack = e.stack === undefined ? "" : Str(e.stack);
      } else {
        name = "";
        message = show(e);
      }
    } catch (x) {
      message = "the tool threw a value that cannot be shown";
    }
    settle("error", stringify({ name, message, stack }));
  }
  function done(v) {
    if (typeof v === "string") return settle("text", v);
    if (v === undefined || v === null) return settle("text", "");
    let s;
    try {
      s = stringify(v);
    } catch (e) {
      return failure(e);
    }
    settle("json", s === undefined ? "null" : s);
  }

  defineProperty(g, "__lathe_start", {
    value: function (argsJSON, infoJSON) {
      const mod = g.__lathe_tool;
      const def = mod && mod.default !== undefined ? mod.default : mod;
      if (!def || typeof def.execute !== "function") {
        settle("nodef", "");
        return;
      }
      let p;
      try {
        p = def.execute(parse(argsJSON), makeCtx(parse(infoJSON)));
      } catch (e) {
        failure(e);
        return;
      }
      apply(then, resolve(p), [done, failure]);
    },
  });
})();
