"""PI's ``p4.tmp.P4DeviceConfig``: the wrapper BMv2-era clients put around the device config.

Clients written for ``simple_switch_grpc`` (the P4 tutorials' ``utils/``, PTF suites built on
them) do not send the BMv2 JSON as ``p4_device_config`` directly: they serialize it inside this
message, which PI's P4Runtime server unwraps (a config that does not parse as one is taken as
raw device data). The message is not part of the ``p4runtime`` wheel, and the ``p4`` package
there is a regular package (nothing can add ``p4.tmp`` beside it), so the descriptor is built
here, in a private pool, from this definition (field numbers are the wire contract)::

    syntax = "proto3";
    package p4.tmp;
    message P4DeviceConfig {
      message Extras { map<string, string> kv = 1; }
      bool reassign = 1;       // drop the device's state and assign it afresh
      Extras extras = 2;       // target-specific options passed along with the assignment
      bytes device_data = 3;   // the device config proper (BMv2 JSON, or a p4switch bundle)
    }

Recognition must not misfire on the JSON device configs p4switch also takes (a source bundle,
BMv2 JSON): any protobuf decoder accepts many byte strings, so a config whose first non-blank
byte is ``{`` is JSON and never a wrapper (a serialized wrapper starts with a field tag: 0x08,
0x12 or 0x1a), and a wrapper must decode without unknown fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from google.protobuf import descriptor_pb2, descriptor_pool, message, message_factory

FULL_NAME = "p4.tmp.P4DeviceConfig"
_FILE = "p4switch/p4/tmp/p4config.proto"


class WrapperError(ValueError):
    """A config that is neither JSON nor a well-formed P4DeviceConfig (INVALID_ARGUMENT)."""


def _build_file() -> descriptor_pb2.FileDescriptorProto:
    F = descriptor_pb2.FieldDescriptorProto
    f = descriptor_pb2.FileDescriptorProto(name=_FILE, package="p4.tmp", syntax="proto3")
    dc = f.message_type.add(name="P4DeviceConfig")
    extras = dc.nested_type.add(name="Extras")
    entry = extras.nested_type.add(name="KvEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    extras.field.add(name="kv", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                     type_name=".p4.tmp.P4DeviceConfig.Extras.KvEntry")
    dc.field.add(name="reassign", number=1, type=F.TYPE_BOOL, label=F.LABEL_OPTIONAL)
    dc.field.add(name="extras", number=2, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                 type_name=".p4.tmp.P4DeviceConfig.Extras")
    dc.field.add(name="device_data", number=3, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
    return f


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_build_file())
#: The message class (``P4DeviceConfig(reassign=True, device_data=b"...")``), for clients and
#: tests that build wrappers the way the tutorials' ``utils/bmv2.py`` does.
P4DeviceConfig = message_factory.MessageFactory(_POOL).GetPrototype(
    _POOL.FindMessageTypeByName(FULL_NAME))


@dataclass
class Unwrapped:
    """A device config with PI's wrapper (if any) taken off."""

    data: bytes
    wrapped: bool = False
    reassign: bool = False
    extras: dict[str, str] = field(default_factory=dict)


def _is_json(data: bytes) -> bool:
    return data.lstrip(b" \t\r\n")[:1] == b"{"


def wrap(device_data: bytes, reassign: bool = True, extras: dict[str, str] | None = None
         ) -> bytes:
    """What a PI-era client sends (the tutorials set ``reassign``)."""
    msg = P4DeviceConfig(reassign=reassign, device_data=device_data)
    for k, v in (extras or {}).items():
        msg.extras.kv[k] = v
    return msg.SerializeToString()


def unwrap(data: bytes) -> Unwrapped:
    """``data`` itself when it is JSON (or empty); the wrapper's ``device_data`` when it is a
    P4DeviceConfig; WrapperError (naming the decoder's complaint) otherwise."""
    if not data or _is_json(data):
        return Unwrapped(data)
    msg = P4DeviceConfig()
    try:
        msg.ParseFromString(data)
    except message.DecodeError as e:
        raise WrapperError(
            f"device config is neither JSON (a p4switch bundle or BMv2 JSON) nor a "
            f"{FULL_NAME}: {e or 'truncated or malformed protobuf'}") from None
    if msg.UnknownFields():
        tags = sorted({f.field_number for f in msg.UnknownFields()})
        raise WrapperError(
            f"device config is neither JSON (a p4switch bundle or BMv2 JSON) nor a "
            f"{FULL_NAME}: it carries unknown field number(s) {tags}")
    return Unwrapped(msg.device_data, True, msg.reassign, dict(msg.extras.kv))
