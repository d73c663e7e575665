#!/usr/bin/env python3
"""An independent reader of TensorBoard event files, for the tests.

The TFRecord framing is read here and both CRCs of every record are checked with a bit-at-a-time
CRC-32C (checked itself against the standard check value of "123456789"). The Event messages are
parsed by Python's protobuf (Debian's python3-protobuf) from the minimal .proto below, which has
TensorBoard's messages and field numbers (tensorboard/compat/proto/event.proto, summary.proto) for
what ringtrain writes, compiled by protoc (Debian's protobuf-compiler) when first needed.

usage: tfevents.py dump FILE
  One JSON line per record, {"wall_time": W, "step": S} with "file_version": V, "scalars":
  {tag: value} or "session_start": true; then {"tail_bytes": N} where the file ends inside a
  record. A bad CRC or an event that does not parse is an error naming the file and the offset.
  Exit status 77 where protoc or google.protobuf is missing.
"""
import importlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

PROTO = """
syntax = "proto3";
package rt_test;

message Event {
  double wall_time = 1;
  int64 step = 2;
  oneof what {
    string file_version = 3;
    Summary summary = 5;
    SessionLog session_log = 7;
  }
}

message Summary {
  message Value {
    string tag = 1;
    oneof value {
      float simple_value = 2;
    }
  }
  repeated Value value = 1;
}

message SessionLog {
  enum SessionStatus {
    STATUS_UNSPECIFIED = 0;
    START = 1;
    STOP = 2;
    CHECKPOINT = 3;
  }
  SessionStatus status = 1;
  string checkpoint_path = 2;
  string msg = 3;
}
"""
SKIP = 77


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


def masked_crc32c(data):
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


class Unavailable(Exception):
    pass


_event_pb2 = None


def event_class():
    """The Event message class, compiled from PROTO once per process."""
    global _event_pb2
    if _event_pb2 is None:
        if shutil.which("protoc") is None:
            raise Unavailable("protoc not found (Debian's protobuf-compiler)")
        try:
            importlib.import_module("google.protobuf")
        except ImportError:
            raise Unavailable(f"google.protobuf does not import in {sys.executable} (Debian's python3-protobuf)")
        out = tempfile.mkdtemp(prefix="rt_tfevents_")
        with open(os.path.join(out, "rt_event.proto"), "w") as f:
            f.write(PROTO)
        subprocess.run(["protoc", f"--proto_path={out}", f"--python_out={out}", "rt_event.proto"], check=True)
        sys.path.insert(0, out)
        _event_pb2 = importlib.import_module("rt_event_pb2")
    return _event_pb2.Event


def read_records(path):
    """(records, tail): every whole record's data, CRCs checked, and the bytes after the last one."""
    data = open(path, "rb").read()
    records, at = [], 0
    while len(data) - at >= 12:
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        if header_crc != masked_crc32c(header):
            raise ValueError(f"{path}: the length's CRC of the record at byte {at} is wrong")
        if len(data) - at < 12 + length + 4:
            break  # cut short
        body = data[at + 12:at + 12 + length]
        (body_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        if body_crc != masked_crc32c(body):
            raise ValueError(f"{path}: the data's CRC of the record at byte {at} is wrong")
        records.append(body)
        at += 16 + length
    return records, len(data) - at


def decode(path, body, index):
    """One record's Event as a dict. A field under a number the .proto does not name is an error,
    and so is one of the wrong wire type, which protobuf keeps as unknown too."""
    event = event_class()()
    event.ParseFromString(body)
    parts = [event, event.summary, event.session_log, *event.summary.value]
    if any(len(p.UnknownFields()) for p in parts):
        raise ValueError(f"{path}: record {index} holds fields other than TensorBoard's: {body.hex()}")
    out = {"wall_time": event.wall_time, "step": event.step}
    what = event.WhichOneof("what")
    if what == "file_version":
        out["file_version"] = event.file_version
    elif what == "summary":
        out["scalars"] = {v.tag: v.simple_value for v in event.summary.value}
    elif what == "session_log":
        if event.session_log.status != event.session_log.START:
            raise ValueError(f"{path}: record {index} is a session log of status {event.session_log.status}")
        out["session_start"] = True
    else:
        raise ValueError(f"{path}: record {index} is an event of no kind")
    return out


def events(path):
    """(events, tail): the file's events as dicts, and the bytes of a record cut short at its end."""
    records, tail = read_records(path)
    return [decode(path, body, i) for i, body in enumerate(records)], tail


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "dump":
        sys.exit(__doc__)
    try:
        decoded, tail = events(sys.argv[2])
    except Unavailable as e:
        print(f"SKIP: {e}")
        sys.exit(SKIP)
    for e in decoded:
        print(json.dumps(e))
    if tail:
        print(json.dumps({"tail_bytes": tail}))


if __name__ == "__main__":
    main()
