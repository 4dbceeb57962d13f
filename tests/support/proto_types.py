"""Protobuf message classes for the schema registry tests, built from a descriptor (no
protoc here): the equivalent of

    syntax = "proto3";
    package cykafka.test;
    enum Color { RED = 0; GREEN = 1; BLUE = 2; }
    message Address { string city = 1; int32 zip = 2; }
    message Order {
      int64 id = 1; string name = 2; double amount = 3; float ratio = 4; bool flag = 5;
      bytes blob = 6; repeated string tags = 7; Address address = 8; Color color = 9;
      map<string, int64> counts = 10; sint32 delta = 11; uint64 big = 12;
      repeated int32 nums = 13;
      oneof payment { string card = 14; string iban = 15; }
    }
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto


def _file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(
        name="cykafka_test_order.proto", package="cykafka.test", syntax="proto3"
    )
    color = fd.enum_type.add(name="Color")
    for i, name in enumerate(("RED", "GREEN", "BLUE")):
        color.value.add(name=name, number=i)
    addr = fd.message_type.add(name="Address")
    addr.field.add(name="city", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    addr.field.add(name="zip", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    order = fd.message_type.add(name="Order")
    opt, rep = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    for name, num, typ, label, tname in (
        ("id", 1, F.TYPE_INT64, opt, None),
        ("name", 2, F.TYPE_STRING, opt, None),
        ("amount", 3, F.TYPE_DOUBLE, opt, None),
        ("ratio", 4, F.TYPE_FLOAT, opt, None),
        ("flag", 5, F.TYPE_BOOL, opt, None),
        ("blob", 6, F.TYPE_BYTES, opt, None),
        ("tags", 7, F.TYPE_STRING, rep, None),
        ("address", 8, F.TYPE_MESSAGE, opt, ".cykafka.test.Address"),
        ("color", 9, F.TYPE_ENUM, opt, ".cykafka.test.Color"),
        ("counts", 10, F.TYPE_MESSAGE, rep, ".cykafka.test.Order.CountsEntry"),
        ("delta", 11, F.TYPE_SINT32, opt, None),
        ("big", 12, F.TYPE_UINT64, opt, None),
        ("nums", 13, F.TYPE_INT32, rep, None),
    ):
        f = order.field.add(name=name, number=num, type=typ, label=label)
        if tname:
            f.type_name = tname
    order.oneof_decl.add(name="payment")
    for name, num in (("card", 14), ("iban", 15)):
        order.field.add(name=name, number=num, type=F.TYPE_STRING, label=opt, oneof_index=0)
    entry = order.nested_type.add(name="CountsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=opt)
    entry.field.add(name="value", number=2, type=F.TYPE_INT64, label=opt)
    return fd


_pool = descriptor_pool.DescriptorPool()
_pool.Add(_file())
Address = message_factory.GetMessageClass(_pool.FindMessageTypeByName("cykafka.test.Address"))
Order = message_factory.GetMessageClass(_pool.FindMessageTypeByName("cykafka.test.Order"))
