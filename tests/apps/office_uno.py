"""Drive a running LibreOffice through its UNO API, one action per run.

Run by Debian's own ``/usr/bin/python3`` (the one ``python3-uno`` is installed for),
never imported by the tests: ``office_uno.py PIPE ACTION ARGS...`` connects to the
office listening on ``pipe,name=PIPE``, does one thing a user would do, and prints one
line of JSON. Exit 3 means LibreOffice could not load the document.

Actions:
  edit PATH TEXT            open PATH, insert TEXT at the start, save (store), close
  saveas SOURCE TARGET TEXT open SOURCE, insert TEXT, save as .docx over TARGET, close
  readonly PATH             open PATH, report whether LibreOffice opened it read-only
  hold PATH                 open PATH, report whether it is read-only, keep it open until
                            a line comes on stdin, then close it
  text PATH                 open PATH, print its text, close
  session PATH              open PATH, report whether it is read-only, then one command
                            a line on stdin: "save TEXT" inserts TEXT and saves (store),
                            "close" closes it; one line of JSON answers each

PATH is a file's path, or a URL LibreOffice opens itself (``vnd.sun.star.webdav://``:
its own WebDAV client).
"""

import json
import os
import sys
import time

import uno
from com.sun.star.beans import PropertyValue

DOCX_FILTER = "MS Word 2007 XML"


def props(**values):
    result = []
    for name, value in values.items():
        prop = PropertyValue()
        prop.Name, prop.Value = name, value
        result.append(prop)
    return tuple(result)


def desktop(pipe):
    local = uno.getComponentContext()
    resolver = local.ServiceManager.createInstanceWithContext(
        "com.sun.star.bridge.UnoUrlResolver", local
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            ctx = resolver.resolve(f"uno:pipe,name={pipe};urp;StarOffice.ComponentContext")
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    return ctx.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", ctx)


def load(office, path):
    url = path if "://" in path else uno.systemPathToFileUrl(path)
    doc = office.loadComponentFromURL(url, "_blank", 0, props(Hidden=True))
    if doc is None:
        print(json.dumps({"loaded": False}))
        sys.exit(3)
    return doc


def insert(doc, text):
    body = doc.getText()
    body.insertString(body.getStart(), text, False)


def main(pipe, action, *args):
    office = desktop(pipe)
    if action == "edit":
        path, text = args
        doc = load(office, path)
        insert(doc, text)
        doc.store()
        doc.close(True)
        print(json.dumps({"saved": True}))
    elif action == "saveas":
        source, target, text = args
        doc = load(office, source)
        insert(doc, text)
        url = uno.systemPathToFileUrl(target)
        doc.storeAsURL(url, props(FilterName=DOCX_FILTER, Overwrite=True))
        doc.close(True)
        print(json.dumps({"saved": True}))
    elif action == "readonly":
        (path,) = args
        doc = load(office, path)
        readonly = bool(doc.isReadonly())
        doc.close(True)
        print(json.dumps({"readonly": readonly}))
    elif action == "hold":
        (path,) = args
        doc = load(office, path)
        print(json.dumps({"readonly": bool(doc.isReadonly())}), flush=True)
        sys.stdin.readline()
        doc.close(True)
        print(json.dumps({"closed": True}))
    elif action == "session":
        (path,) = args
        doc = load(office, path)
        print(json.dumps({"readonly": bool(doc.isReadonly())}), flush=True)
        for line in sys.stdin:
            command, _, text = line.rstrip("\n").partition(" ")
            if command == "save":
                insert(doc, text)
                doc.store()
                print(json.dumps({"saved": True}), flush=True)
            elif command == "close":
                doc.close(True)
                print(json.dumps({"closed": True}), flush=True)
                break
    elif action == "text":
        (path,) = args
        doc = load(office, path)
        text = doc.getText().getString()
        doc.close(True)
        print(json.dumps({"text": text}))
    else:
        raise SystemExit(f"unknown action {action}")


if __name__ == "__main__":
    main(*sys.argv[1:])
    # Every call above has returned (the document is stored and closed): leave without
    # the interpreter's teardown, in which the UNO bridge now and then crashes (SIGSEGV)
    # after the work is done.
    sys.stdout.flush()
    os._exit(0)
