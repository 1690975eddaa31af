"""Formal proofs of the switch with SymbiYosys (``yowasp-sby``): harnesses and their runner."""
