#!/usr/bin/env python3
"""Builds a corpus of real licence texts from a Debian system, for measuring clusters.

Documents (JSON lines: id, title, text):
  - every file of /usr/share/common-licenses          (id `common/NAME`);
  - every /usr/share/doc/PACKAGE/copyright file        (id `copyright/PACKAGE`; symlinked
    doc directories are read once, under the first package name that reaches them);
  - every stand-alone licence stanza of the machine-readable (DEP-5) copyright files: a
    paragraph that starts with `License: NAME` and has a body (id `stanza/PACKAGE/N`).

Deterministic for a given system (sorted walk). Usage:

    python3 tools/licence_corpus.py licences.jsonl.gz [--root /]

Prints how many documents of each kind it wrote.
"""
import gzip
import json
import os
import sys


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def stanzas(text):
    """The stand-alone licence paragraphs of a DEP-5 copyright file: (name, body)."""
    if not text.startswith("Format:"):
        return []
    out = []
    for para in text.split("\n\n"):
        lines = para.strip("\n").split("\n")
        if not lines or not lines[0].startswith("License:"):
            continue
        name = lines[0][len("License:"):].strip()
        body = []
        for line in lines[1:]:
            if not line.startswith((" ", "\t")):
                break  # another field
            line = line[1:]
            body.append("" if line.strip() == "." else line)
        body_text = "\n".join(body).strip()
        if name and body_text:
            out.append((name, body_text))
    return out


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit("usage: licence_corpus.py OUT.jsonl.gz [--root DIR]")
    out_path = args[0]
    root = args[args.index("--root") + 1] if "--root" in args else "/"
    common = os.path.join(root, "usr/share/common-licenses")
    docs_dir = os.path.join(root, "usr/share/doc")
    counts = {"common": 0, "copyright": 0, "stanza": 0}
    seen = set()
    with gzip.open(out_path, "wt", encoding="utf-8") as out:
        def emit(kind, doc_id, title, text):
            out.write(json.dumps({"id": doc_id, "title": title, "text": text}, ensure_ascii=False) + "\n")
            counts[kind] += 1

        for name in sorted(os.listdir(common)):
            path = os.path.realpath(os.path.join(common, name))
            text = read(path) if os.path.isfile(path) else None
            if text and path not in seen:
                seen.add(path)
                emit("common", f"common/{name}", name, text)
        for pkg in sorted(os.listdir(docs_dir)):
            path = os.path.realpath(os.path.join(docs_dir, pkg, "copyright"))
            if path in seen or not os.path.isfile(path):
                continue
            seen.add(path)
            text = read(path)
            if not text or not text.strip():
                continue
            emit("copyright", f"copyright/{pkg}", f"{pkg} copyright", text)
            for n, (name, body) in enumerate(stanzas(text), 1):
                emit("stanza", f"stanza/{pkg}/{n}", f"License: {name}", body)
    total = sum(counts.values())
    print(f"{total} documents: {counts['common']} common licences, {counts['copyright']} copyright files, "
          f"{counts['stanza']} licence stanzas -> {out_path}")


if __name__ == "__main__":
    main()
