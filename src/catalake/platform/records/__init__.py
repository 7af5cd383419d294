"""The record model: a landed value as one normalized `Record` (structured or binary CloudEvents,
protocol records), the CloudEvents attributes and their types, the protocol bindings, and the
strict JSON parser that refuses what RFC 8259 does."""
