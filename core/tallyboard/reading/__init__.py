"""Reading runs back: run discovery, :func:`tallyboard.read` and :func:`tallyboard.convert`."""
