"""The 4x4 torus under bubble flow control that the bubble tests share: one VC a link, whose +
rings are cyclic without the bubble (``tie: plus``), cut-through, buffers of two packets."""

BUBBLE_TORUS = {
    "name": "torus-4x4-bubble",
    "topology": {"kind": "torus", "k": [4, 4]},
    "routing": {"name": "dor", "flow_control": "bubble", "tie": "plus"},
    "router": {"switching": "cut_through"},
    "buffer_depth": 8,
    "packet_length": 4,
}
