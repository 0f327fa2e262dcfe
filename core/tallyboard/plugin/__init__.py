"""The plugin contract: hookspecs, kinds, sinks, the reader contract, and the registry that finds
plugins through the ``tallyboard`` entry-point group."""
