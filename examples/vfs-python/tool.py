#!/usr/bin/env python3
"""A lathe VFS tool in Python, with nothing but the standard library.

A VFS tool (runtime = "vfs" in lathe.toml) runs confined: no workspace, no
network, no environment of its own. It asks lathe for what it needs over
its standard input and output (the host API, docs/host.md):

  * the first line on standard input is the request (docs/protocol.md),
    whose context.host says the host API is there;
  * each host request is one JSON-RPC line on standard output, and its
    response one line on standard input;
  * the answer is one line with a "type" on standard output, after which
    the call is over.

Configure it as

    [toolsets.py]
    runtime = "vfs"
    command = ["python3", "tool.py"]
    read = ["**"]

The file holds a small host client (Host) and tools that use it:
wordcount, and the tools of lathe's conformance suite (echo, fail, sleep,
crash, huge, ask), which lathe's tests run against this file.
"""

import base64
import json
import sys
import threading
import time


class HostError(Exception):
    """An error the host answered with; code -32001 means denied."""

    def __init__(self, error):
        super().__init__(error.get("message", "host error"))
        self.code = error.get("code")


class Host:
    """The client of lathe's host API over this process's stdio."""

    def __init__(self, stdin, stdout):
        self._in, self._out = stdin, stdout
        self._lock = threading.Lock()
        self._next = 0

    def call(self, method, params):
        # One request at a time keeps the client small: the response to
        # the request just sent is the next line lathe writes.
        with self._lock:
            self._next += 1
            rid = self._next
            self._out.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n")
            self._out.flush()
            while True:
                line = self._in.readline()
                if not line:
                    raise HostError({"code": -32003, "message": "the host closed the connection"})
                resp = json.loads(line)
                if resp.get("id") == rid:
                    break
        if resp.get("error"):
            raise HostError(resp["error"])
        return resp.get("result")

    def read_file(self, path):
        data, offset = b"", 0
        while True:
            r = self.call("fs/read", {"path": path, "offset": offset})
            chunk = base64.b64decode(r.get("data") or "")
            data += chunk
            offset += len(chunk)
            if r.get("eof") or not chunk:
                return data

    def write_file(self, path, data, append=False):
        p = {"path": path, "data": base64.b64encode(data).decode()}
        if append:
            p["append"] = True
        return self.call("fs/write", p)

    def list(self, path):
        return self.call("fs/list", {"path": path})["entries"]

    def log(self, message, level="info"):
        self.call("log", {"level": level, "message": message})


def success(text, structured=None):
    a = {"type": "success", "content": text}
    if structured is not None:
        a["structured"] = structured
    return a


def failure(message):
    return {"type": "error", "message": message}


def obj(props, required):
    return {"type": "object", "properties": props, "required": [required], "additionalProperties": False}


TOOLS = [
    {"name": "wordcount", "summary": "Count the lines and words of a file of the workspace.",
     "parameters": obj({"path": {"type": "string"}}, "path")},
    {"name": "echo", "summary": "Echo the text.", "parameters": obj({"text": {"type": "string"}}, "text")},
    {"name": "fail", "summary": "Fail.", "parameters": obj({"message": {"type": "string"}}, "message")},
    {"name": "sleep", "summary": "Wait until stopped.", "parameters": obj({"marker": {"type": "string"}}, "marker")},
    {"name": "crash", "summary": "Die.", "parameters": obj({"message": {"type": "string"}}, "message")},
    {"name": "huge", "summary": "Write a lot.", "parameters": obj({"size": {"type": "integer", "minimum": 1}}, "size")},
    {"name": "ask", "summary": "Ask first.", "parameters": obj({"subject": {"type": "string"}}, "subject")},
]


def run(req, host):
    name, args = req.get("tool"), req.get("arguments") or {}
    if name == "wordcount":
        text = host.read_file(args["path"]).decode("utf-8", "replace")
        counts = {"lines": text.count("\n"), "words": len(text.split())}
        host.log("counted %s" % args["path"])
        return success("%(lines)d lines, %(words)d words" % counts, counts)
    if name == "echo":
        return success(args["text"], {"text": args["text"]})
    if name == "fail":
        return failure(args["message"] + ": the cause")
    if name == "sleep":
        # Its process id means nothing outside its sandbox; the marker says
        # only that it started.
        host.write_file(args["marker"], b"started\n", append=True)
        while True:
            time.sleep(3600)
    if name == "crash":
        sys.stderr.write(args["message"] + "\n")
        sys.stderr.flush()
        sys.exit(3)
    if name == "huge":
        return success("x" * args["size"])
    if name == "ask":
        answers = req.get("answers") or {}
        if "confirm" not in answers:
            return {"type": "needs_input", "question": {"id": "confirm", "text": "Go ahead with %s?" % args["subject"],
                                                        "answer_type": "boolean"}}
        ok = answers["confirm"] in (True, "true", "yes", "y", "1")
        return success("confirmed " + args["subject"]) if ok else failure("declined " + args["subject"])
    return failure("no tool is named %r" % name)


def main():
    stdin, stdout = sys.stdin, sys.stdout
    req = json.loads(stdin.readline())
    if req.get("action") == "schema":
        answer = {"tools": TOOLS}
    elif req.get("action") == "format_arguments":
        answer = success(json.dumps(req.get("arguments") or {}, separators=(",", ":")))
    else:
        host = Host(stdin, stdout) if req.get("context", {}).get("host") else None
        try:
            answer = run(req, host)
        except HostError as e:
            answer = failure("the host refused: %s" % e)
    stdout.write(json.dumps(answer) + "\n")
    stdout.flush()


if __name__ == "__main__":
    main()
