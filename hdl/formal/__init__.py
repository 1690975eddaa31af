"""Formal proofs of the switch's units and the endpoints' receive side with SymbiYosys
(``yowasp-sby``): harnesses, their runner and the proof kinds of a plan
(docs/design/verification.md)."""
