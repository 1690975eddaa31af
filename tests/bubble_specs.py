"""The fabrics under bubble flow control that the bubble tests share, each with rings that are
cyclic without the bubble, cut-through switching and buffers of two 4-flit packets.

- the torus 4x4, one VC a link, ``tie: plus``: every tie goes +, so a + ring's packets travel
  up to two hops and its four channels close a dependency cycle;
- the nDT 2x4x2 (CBest: Card0 holds d0+ d0- d1-, Card1 d1+ d2+ d2-), one VC per external link
  and the internal link's VCs ch, ring, pe: its split dimension d1 (k = 4) ties toward d1-,
  Card0's port, so a d1- packet travels up to two hops, through the internal link's ring VC
  between them, and each d1- ring's eight channels (four external, four internal) close a
  cycle; d0 and d2 (k = 2) take one hop at most.
"""

BUBBLE_TORUS = {
    "name": "torus-4x4-bubble",
    "topology": {"kind": "torus", "k": [4, 4]},
    "routing": {"name": "dor", "flow_control": "bubble", "tie": "plus"},
    "router": {"switching": "cut_through"},
    "buffer_depth": 8,
    "packet_length": 4,
}

BUBBLE_NDT = {
    "name": "ndt-2x4x2-bubble",
    "topology": {"kind": "ndt", "k": [2, 4, 2]},
    "routing": {"name": "dort", "flow_control": "bubble"},
    "router": {"switching": "cut_through"},
    "buffer_depth": 8,
    "packet_length": 4,
}
