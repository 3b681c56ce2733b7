// lathe's shim for JavaScript tools of runtime "node". lathe runs it as a
// VFS tool: node shim.js BUNDLE, with no workspace, no network and no
// environment. It reads the request line, offers the tool's execute the
// same ctx as the embedded engine does, each operation a host API request
// over standard output answered on standard input, and writes the answer.
'use strict';
const fs = require('fs');

let pending = Buffer.alloc(0);
function readLine() {
  for (;;) {
    const i = pending.indexOf(10);
    if (i >= 0) {
      const line = pending.subarray(0, i).toString('utf8');
      pending = pending.subarray(i + 1);
      return line;
    }
    const chunk = Buffer.alloc(1 << 16);
    let n;
    try {
      n = fs.readSync(0, chunk, 0, chunk.length, null);
    } catch (e) {
      if (e.code === 'EAGAIN') continue;
      throw e;
    }
    if (n === 0) return null;
    pending = Buffer.concat([pending, chunk.subarray(0, n)]);
  }
}

function writeLine(obj) {
  const b = Buffer.from(JSON.stringify(obj) + '\n');
  for (let off = 0; off < b.length;) {
    try {
      off += fs.writeSync(1, b, off);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
    }
  }
}

function hostError(e) {
  const err = new Error(e.message || 'host error');
  err.code = e.code;
  if (e.data !== undefined) err.data = e.data;
  return err;
}

// Host requests are synchronous: one in flight, its answer the next line
// with its id.
let nextId = 0;
function call(method, params) {
  const id = ++nextId;
  writeLine({ jsonrpc: '2.0', id, method, params });
  for (;;) {
    const line = readLine();
    if (line === null) throw hostError({ code: -32003, message: 'the host closed the connection' });
    let m;
    try { m = JSON.parse(line); } catch { continue; }
    if (m.id !== id) continue;
    if (m.error) throw hostError(m.error);
    return m.result;
  }
}

const b64 = (data) => Buffer.from(typeof data === 'string' ? Buffer.from(data, 'utf8') : data).toString('base64');
const bytes = (s) => (s ? Buffer.from(s, 'base64') : Buffer.alloc(0));

// Question ends the call with a question the answers loop resumes.
class Question {
  constructor(q) { this.q = q; }
}

function makeCtx(req) {
  const c = req.context || {};
  const answers = req.answers || {};
  const readBytes = (path) => {
    const parts = [];
    for (let offset = 0; ;) {
      const r = call('fs/read', { path, offset });
      const chunk = bytes(r.data);
      parts.push(chunk);
      offset += chunk.length;
      if (r.eof || chunk.length === 0) return new Uint8Array(Buffer.concat(parts));
    }
  };
  return Object.freeze({
    callId: c.call_id,
    root: c.root,
    options: c.options || {},
    fs: Object.freeze({
      readBytes,
      readFile: (path) => Buffer.from(readBytes(path)).toString('utf8'),
      writeFile: (path, data, o = {}) => call('fs/write', { path, data: b64(data), append: !!o.append, make_dirs: !!o.makeDirs }),
      list: (path) => call('fs/list', { path }),
      stat: (path) => call('fs/stat', { path }),
      remove: (path, o = {}) => call('fs/remove', { path, recursive: !!o.recursive }),
    }),
    fetch: (url, o = {}) => {
      const p = { url, method: o.method, headers: o.headers };
      if (o.body !== undefined) p.body = b64(o.body);
      const r = call('net/fetch', p);
      return { status: r.status, headers: r.headers || {}, body: bytes(r.body).toString('utf8'), truncated: !!r.truncated };
    },
    run: (argv, o = {}) => {
      const p = { argv, dir: o.dir };
      if (o.stdin !== undefined) p.stdin = b64(o.stdin);
      const r = call('proc/run', p);
      return { exitCode: r.exit_code, stdout: bytes(r.stdout).toString('utf8'), stderr: bytes(r.stderr).toString('utf8') };
    },
    env: (name) => {
      const r = call('env/get', { name });
      return r.set ? r.value : undefined;
    },
    log: (message, level = 'info') => { call('log', { message: String(message), level }); },
    progress: (progress, total, message) => { call('progress', { progress, total, message }); },
    ask: (q) => {
      if (Object.prototype.hasOwnProperty.call(answers, q.id)) return answers[q.id];
      const question = { id: q.id, text: q.text, answer_type: 'text' };
      if (q.type === 'boolean') question.answer_type = 'boolean';
      else if (q.type && Array.isArray(q.type.select)) question.answer_type = { select: q.type.select };
      if (q.default !== undefined) question.default = q.default;
      throw new Question(question);
    },
  });
}

async function main() {
  const line = readLine();
  if (line === null) process.exit(2);
  const req = JSON.parse(line);
  if (req.protocol !== 1) {
    writeLine({ type: 'error', message: 'lathe\'s node shim speaks protocol 1, and the request is of ' + req.protocol });
    return;
  }
  const mod = require(process.argv[2]);
  const def = mod && mod.default !== undefined ? mod.default : mod;
  if (req.action !== 'run') {
    writeLine({ type: 'error', message: 'a node tool is described by its tool.json; it answers only run' });
    return;
  }
  if (!def || typeof def.execute !== 'function') {
    writeLine({ type: 'error', message: 'the tool\'s default export has no execute function' });
    return;
  }
  try {
    const out = await def.execute(req.arguments || {}, makeCtx(req));
    if (out !== null && typeof out === 'object' && Array.isArray(out.content)) {
      // A result of its own, as the embedded engine takes it.
      const structured = out.structured !== undefined ? out.structured : out.structuredContent;
      if (out.isError) {
        writeLine({ type: 'error', message: out.content.map((c) => (c && c.text) || '').join('\n') });
      } else {
        const ans = { type: 'success', content: out.content };
        if (structured !== undefined && structured !== null) ans.structured = structured;
        writeLine(ans);
      }
    } else if (typeof out === 'string') writeLine({ type: 'success', content: out });
    else if (out === undefined || out === null) writeLine({ type: 'success', content: '' });
    else if (out !== null && typeof out === 'object' && !Array.isArray(out)) writeLine({ type: 'success', content: JSON.stringify(out), structured: out });
    else writeLine({ type: 'success', content: JSON.stringify(out) });
  } catch (e) {
    if (e instanceof Question) writeLine({ type: 'needs_input', question: e.q });
    else writeLine({ type: 'error', message: e && e.stack ? String(e.stack) : String(e) });
  }
}

main().then(() => process.exit(0), (e) => {
  writeLine({ type: 'error', message: String(e && e.stack ? e.stack : e) });
  process.exit(1);
});
