"""The pieces of a switch: input units, route units, allocator, crossbar and output units."""
