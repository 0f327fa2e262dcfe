"""Record files: TFRecord framing and CRCs, hand-packed protobuf, the background record writer,
the framed-record reader, local and remote storage, and process lifecycle (exit, fork)."""
