#!/usr/bin/env python3
"""Checks tes_json_world's output for random worlds with Python's own JSON
parser: the text must parse as strict RFC 8259 JSON (valid UTF-8, no bare
NaN or Infinity, no raw control characters), and every component, member
and value must be the one the generator (json_world_gen.c) put in the
world, read back exactly: integers in full, floats bit for bit (f32 values
through the nearest float), strings with each invalid UTF-8 byte as
U+FFFD, handles as decimal strings, data without members as base64.

Usage: check_json_world.py GENERATOR WORKDIR SEEDS
"""
import base64
import json
import math
import os
import struct
import subprocess
import sys

TYPES = {1: "bool", 2: "i8", 3: "i16", 4: "i32", 5: "i64", 6: "u8", 7: "u16", 8: "u32",
         9: "u64", 10: "f32", 11: "f64", 12: "entity", 13: "char"}


def text(hexed):
    """The string JSON must hold for these bytes: valid UTF-8 sequences as
    they are, every other byte U+FFFD (one per byte)."""
    raw = b"" if hexed == "-" else bytes.fromhex(hexed)
    out, i = [], 0
    while i < len(raw):
        lead = raw[i]
        length = 1 if lead < 0x80 else 2 if 0xC0 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 \
            else 4 if 0xF0 <= lead < 0xF8 else 0
        if length:
            try:
                out.append(raw[i:i + length].decode("utf-8", errors="strict"))
                i += length
                continue
            except UnicodeDecodeError:
                pass
        out.append("\ufffd")
        i += 1
    return "".join(out)


def reject_constant(name):
    raise ValueError("bare %s is not JSON" % name)


def float_of(value):
    if isinstance(value, str):
        assert value in ("nan", "inf", "-inf"), value
        return float(value)
    assert isinstance(value, (int, float)) and not isinstance(value, bool), value
    return float(value)


def check_float(value, bits, single):
    got = float_of(value)
    if single:
        want = struct.unpack("<f", struct.pack("<I", bits))[0]
        if math.isnan(want):
            assert value == "nan", (value, hex(bits))
            return
        packed = struct.unpack("<I", struct.pack("<f", got))[0]
        assert packed == bits, ("f32", value, hex(bits), hex(packed))
    else:
        want = struct.unpack("<d", struct.pack("<Q", bits))[0]
        if math.isnan(want):
            assert value == "nan", (value, hex(bits))
            return
        packed = struct.unpack("<Q", struct.pack("<d", got))[0]
        assert packed == bits, ("f64", value, hex(bits), hex(packed))


def check_scalar(kind, value, token):
    if kind == "bool":
        assert value is (token == "1"), (value, token)
    elif kind in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"):
        assert isinstance(value, int) and not isinstance(value, bool) and value == int(token), \
            (kind, value, token)
    elif kind == "f32":
        check_float(value, int(token), True)
    elif kind == "f64":
        check_float(value, int(token), False)
    elif kind == "entity":
        assert (value is None) if token == "0" else (value == token), (value, token)
    else:
        raise AssertionError(kind)


def check(json_path, expect_path):
    with open(json_path, "rb") as f:
        raw = f.read()
    raw.decode("utf-8", errors="strict")  # the whole text is valid UTF-8
    doc = json.loads(raw, parse_constant=reject_constant)
    assert set(doc) == {"components", "entities"}, doc.keys()
    comps = iter(doc["components"])
    entities = iter(doc["entities"])
    entity = None
    seen = set()
    values = 0
    with open(expect_path) as f:
        lines = [line.split() for line in f]
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line[0] == "D":
            c = next(comps)
            assert c["name"] == text(line[1]) and c["id"] == int(line[2]), (c, line)
            assert c["size"] == int(line[3]) and c["storage"] == line[4], (c, line)
            assert len(c["members"]) == int(line[5]), (c, line)
            for m in c["members"]:
                mline = lines[i]
                i += 1
                assert mline[0] == "m" and m["name"] == text(mline[1]), (m, mline)
                assert m["type"] == TYPES[int(mline[2])], (m, mline)
                assert m["offset"] == int(mline[3]) and m["count"] == int(mline[4]), (m, mline)
        elif line[0] == "E":
            if entity is not None:
                assert set(entity["components"]) == seen, (entity["components"].keys(), seen)
            entity = next(entities)
            seen = set()
            assert entity["id"] == line[1], (entity["id"], line)
            assert entity["disabled"] is (line[2] == "1") and entity["prefab"] is (line[3] == "1")
            assert entity["name"] is None and entity["path"] is None and entity["parent"] is None
        elif line[0] == "C":
            name = text(line[1])
            seen.add(name)
            value = entity["components"][name]
            if line[2] == "tag":
                assert value is True, value
            elif line[2] == "bytes":
                assert set(value) == {"bytes"}, value
                assert base64.b64decode(value["bytes"], validate=True) == bytes.fromhex(line[3])
            else:
                members = value
                assert isinstance(members, dict)
                n = 0
                while i < len(lines) and lines[i][0] == "V":
                    v = lines[i]
                    i += 1
                    n += 1
                    kind = TYPES[int(v[2])]
                    got = members[text(v[1])]
                    if kind == "char":
                        assert got == text(v[3]), (got, v)
                    elif len(v) == 4:
                        check_scalar(kind, got, v[3])
                    else:
                        assert isinstance(got, list) and len(got) == len(v) - 3, (got, v)
                        for g, token in zip(got, v[3:]):
                            check_scalar(kind, g, token)
                    values += max(1, len(v) - 3)
                assert n == len(members), (members.keys(), n)
        else:
            raise AssertionError(line)
    if entity is not None:
        assert set(entity["components"]) == seen
    assert next(comps, None) is None and next(entities, None) is None
    return values


def main():
    gen, work, seeds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.makedirs(work, exist_ok=True)
    total = 0
    for seed in range(1, seeds + 1):
        js = os.path.join(work, "world_%d.json" % seed)
        ex = os.path.join(work, "world_%d.expect" % seed)
        subprocess.run([gen, str(seed), js, ex], check=True)
        try:
            total += check(js, ex)
        except Exception:
            print("seed %d failed (%s, %s)" % (seed, js, ex))
            raise
        os.remove(js)
        os.remove(ex)
    print("%d worlds, %d values read back exactly" % (seeds, total))


if __name__ == "__main__":
    main()
