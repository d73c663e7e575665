"""Writes an image folder (ROOT/<class>/<file>) as TFRecord files of tf.Example records, as
TensorFlow's ImageNet scripts lay them out, independently of ringtrain's reader: the messages
built by Debian's python3-protobuf from tf.Example's field numbers (example.proto,
feature.proto), the framing CRCs by Debian's python3-crcmod. Samples in the folder index's
order, N per file, named train-00000-of-0000K; labels 1-based (the class index + 1) with the
other features those scripts write beside them.

usage: write_tfrecords.py ROOT OUT [--per-file N]     (exit 77 where a module is missing)"""
import argparse
import os
import struct
import sys

try:
    import crcmod.predefined
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

p = argparse.ArgumentParser()
p.add_argument("root")
p.add_argument("out")
p.add_argument("--per-file", type=int, default=5)
a = p.parse_args()

# tensorflow/core/example/feature.proto and example.proto, as a descriptor.
f = descriptor_pb2.FileDescriptorProto(name="example.proto", package="tensorflow", syntax="proto3")
F = descriptor_pb2.FieldDescriptorProto


def message(name, *fields, map_entry=False):
    m = f.message_type.add(name=name)
    if map_entry:
        m.options.map_entry = True
    for number, field_name, kind, label, type_name in fields:
        fd = m.field.add(name=field_name, number=number, type=kind, label=label)
        if type_name:
            fd.type_name = type_name
    return m


REP, OPT = F.LABEL_REPEATED, F.LABEL_OPTIONAL
message("BytesList", (1, "value", F.TYPE_BYTES, REP, None))
message("Int64List", (1, "value", F.TYPE_INT64, REP, None))
feature = message("Feature", (1, "bytes_list", F.TYPE_MESSAGE, OPT, ".tensorflow.BytesList"),
                  (3, "int64_list", F.TYPE_MESSAGE, OPT, ".tensorflow.Int64List"))
feature.oneof_decl.add(name="kind")
for fd in feature.field:
    fd.oneof_index = 0
features = message("Features", (1, "feature", F.TYPE_MESSAGE, REP, ".tensorflow.Features.FeatureEntry"))
entry = features.nested_type.add(name="FeatureEntry")
entry.options.map_entry = True
entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=OPT)
entry.field.add(name="value", number=2, type=F.TYPE_MESSAGE, label=OPT, type_name=".tensorflow.Feature")
message("Example", (1, "features", F.TYPE_MESSAGE, OPT, ".tensorflow.Features"))
pool = descriptor_pool.DescriptorPool()
pool.Add(f)
descriptor = pool.FindMessageTypeByName("tensorflow.Example")
if hasattr(message_factory, "GetMessageClass"):  # protobuf 4.x and later
    Example = message_factory.GetMessageClass(descriptor)
else:  # Debian 12's 3.21
    Example = message_factory.MessageFactory(pool).GetPrototype(descriptor)

crc = crcmod.predefined.mkCrcFun("crc-32c")


def masked(data):
    c = crc(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def record(data):
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked(length)) + data + struct.pack("<I", masked(data))


classes = sorted(d for d in os.listdir(a.root) if os.path.isdir(os.path.join(a.root, d)) and not d.startswith("."))
samples = []
for label, c in enumerate(classes):
    files = []
    for dirpath, _, names in os.walk(os.path.join(a.root, c)):
        files += [os.path.relpath(os.path.join(dirpath, n), a.root) for n in names if not n.startswith(".")]
    samples += [(f, label) for f in sorted(files)]

os.makedirs(a.out, exist_ok=True)
count = (len(samples) + a.per_file - 1) // a.per_file
for k in range(count):
    with open(os.path.join(a.out, f"train-{k:05d}-of-{count:05d}"), "wb") as out:
        for name, label in samples[k * a.per_file:(k + 1) * a.per_file]:
            ex = Example()
            feat = ex.features.feature
            feat["image/class/label"].int64_list.value.append(label + 1)
            feat["image/encoded"].bytes_list.value.append(open(os.path.join(a.root, name), "rb").read())
            feat["image/format"].bytes_list.value.append(b"JPEG")
            feat["image/class/synset"].bytes_list.value.append(classes[label].encode())
            feat["image/height"].int64_list.value.append(0)
            out.write(record(ex.SerializeToString()))
