#!/usr/bin/env python3
"""The runtime conformance suite's tools, in Python 3 with no library but
the standard one: lathe's process protocol needs nothing more than reading
one JSON object from stdin and writing one to stdout."""

import json
import os
import sys


def obj(name, typ, **extra):
    prop = {"type": typ}
    prop.update(extra)
    return {"type": "object", "properties": {name: prop}, "required": [name],
            "additionalProperties": False}


TOOLS = [
    {"name": "echo", "summary": "Echo the text.", "parameters": obj("text", "string"),
     "annotations": {"readOnlyHint": True}},
    {"name": "fail", "summary": "Fail with the message.", "parameters": obj("message", "string")},
    {"name": "sleep", "summary": "Wait until stopped.", "parameters": obj("marker", "string")},
    {"name": "crash", "summary": "Die without an answer.", "parameters": obj("message", "string")},
    {"name": "huge", "summary": "Write size bytes.", "parameters": obj("size", "integer", minimum=1)},
    {"name": "ask", "summary": "Ask before going ahead.", "parameters": obj("subject", "string")},
]


def answer(obj):
    sys.stdout.write(json.dumps(obj))
    sys.stdout.write("\n")


def main():
    req = json.load(sys.stdin)
    if req["action"] == "schema":
        answer({"tools": TOOLS})
        return
    name, args = req["tool"], req.get("arguments", {})
    answers = req.get("answers") or {}
    if name == "echo":
        answer({"type": "success", "content": args["text"], "structured": {"text": args["text"]}})
    elif name == "fail":
        answer({"type": "error", "message": args["message"], "trace": ["in python"], "transient": False})
    elif name == "sleep":
        import subprocess  # here, not above: it is slow to import, and only this tool needs it
        child = subprocess.Popen(["sleep", "300"])
        with open(args["marker"], "a") as f:
            f.write("pid %d\npid %d\nstarted\n" % (os.getpid(), child.pid))
        child.wait()
    elif name == "crash":
        sys.stderr.write(args["message"] + "\n")
        sys.exit(3)
    elif name == "huge":
        answer({"type": "success", "content": "x" * args["size"]})
    elif name == "ask":
        if "confirm" not in answers:
            answer({"type": "needs_input", "question": {
                "id": "confirm", "text": "Go ahead with %s?" % args["subject"], "answer_type": "boolean"}})
        elif answers["confirm"] is True:
            answer({"type": "success", "content": "confirmed " + args["subject"]})
        else:
            answer({"type": "error", "message": "declined " + args["subject"]})
    else:
        answer({"type": "error", "message": "no tool named %r" % name})


main()
