"""``NAME_tb.v``: a self-checking plain-Verilog testbench for an emitted fabric, which runs under
Icarus (``iverilog -g2012``, ``vvp``) with no Python.

Every endpoint sends one packet of ``beats`` beats to every other endpoint (endpoint ``e``'s
``k``-th packet goes to ``(e + 1 + k) mod N``), keeping AXI4-Stream's rules (``tvalid`` and
the beat held until ``tready``). Every beat's ``tdata`` is a hash of (source, destination,
beat), so a beat delivered anywhere but at its destination, or altered, or out of place, does
not match what the receiving stream expects. Each output stream holds ``tready`` low one
cycle in ``stall`` (a fixed pattern, staggered per stream), exercising ejection backpressure.

The testbench prints one ``FAIL:`` line per problem (a beat whose ``tid``, ``tdata`` or
``tlast`` is wrong, naming the packet a misdelivered beat belongs to; a packet received twice;
packets never delivered when no beat arrives for a while) and ends with a line starting
``PASS`` or ``FAIL``, then calls ``$finish``.

Port names come from the emitted top's port list (``Emission.ports``) read through
:func:`~zfabric.hdl.naming.axis_name`; a top whose ports differ from what it names is refused.
"""

from __future__ import annotations

from collections.abc import Sequence

from zfabric.plan import FabricPlan

from .naming import AXIS_IN, AXIS_OUT, axis_name, clock_ports, output_attachments

__all__ = ["testbench"]

#: the testbench's localparams holding the widths of the multi-bit stream signals
_WIDTHS = {"tdata": "TDATAW", "tdest": "TDESTW", "tid": "TIDW"}

#: most ``FAIL:`` lines about single beats and missing packets before the last line
MAX_MESSAGES = 10


#: ``(direction, width, name)`` per port of the top, clock and reset left out (``Emission.ports``)
Ports = Sequence[tuple[str, int, str]]


def _connections(
    plan: FabricPlan, ports: Ports, attachments: int, outputs: Sequence[int]
) -> tuple[dict, dict]:
    """Per top port, the testbench expression it connects to, and the widths of ``tdata``,
    ``tdest`` and ``tid``; refuses a top whose ports are not the streams ``axis_name`` names."""
    widths = {name: width for _, width, name in ports}
    wanted: dict[str, tuple[str, str]] = {}  # port -> (signal, expression)

    def select(vector: str, index: int) -> str:
        width = _WIDTHS.get(vector[2:])
        return f"{vector}[{index} * {width} +: {width}]" if width else f"{vector}[{index}]"

    for e in range(len(plan.endpoints)):
        for signal in AXIS_IN:
            wanted[axis_name(e, signal)] = (signal, select(f"s_{signal}", e))
        for r, a in enumerate(outputs):
            for signal in AXIS_OUT:
                name = axis_name(e, signal, a, attachments=attachments)
                wanted[name] = (signal, select(f"m_{signal}", e * len(outputs) + r))
    if set(wanted) != set(widths):
        odd = sorted(set(widths) ^ set(wanted))
        raise ValueError(f"the top's ports are not its endpoints' AXI4-Stream ports: {odd[:4]!r}")
    bits: dict[str, int] = {}
    for name, (signal, _) in wanted.items():
        if bits.setdefault(signal, widths[name]) != widths[name]:
            raise ValueError(f"port {name!r} is {widths[name]} bits, not {bits[signal]}")
    if 1 << bits["tdest"] < len(plan.endpoints):
        raise ValueError(
            f"tdest of {bits['tdest']} bits cannot name {len(plan.endpoints)} endpoints"
        )
    conns = {name: expression for name, (_, expression) in wanted.items()}
    return conns, {"W": bits["tdata"], "DW": bits["tdest"], "IW": bits["tid"]}


def testbench(
    plan: FabricPlan,
    top: str,
    ports: Ports,
    *,
    beats: int | None = None,
    stall: int = 7,
    reset: str = "rst",
) -> str:
    """The testbench of the fabric of ``plan`` emitted as module ``top`` with ``ports``
    (``Emission.ports``) and the reset port ``reset`` (``rst``, or ``aresetn``: driven as
    ``!rst`` from the bench's own active-high ``rst``): packets of ``beats`` beats (default 3,
    or the longest packet a cut-through or store-and-forward fabric takes if shorter); each
    output's ``tready`` low one cycle in ``stall`` (0: always high)."""
    longest = None if plan.router.switching == "wormhole" else plan.router.longest_packet
    if beats is None:
        beats = min(3, longest or 3)
    if not isinstance(beats, int) or beats < 1:
        raise ValueError(f"beats must be a positive integer, not {beats!r}")
    if longest is not None and beats > longest:
        raise ValueError(
            f"beats {beats}: longer than the {longest} flits {plan.router.switching} takes"
        )
    if not isinstance(stall, int) or stall < 0 or stall == 1:
        raise ValueError(f"stall must be 0 or an integer >= 2, not {stall!r}")
    n = len(plan.endpoints)
    if n < 2:
        raise ValueError(f"a testbench needs at least 2 endpoints, not {n}")
    attachments = len(plan.endpoints[0].attachments)
    if any(len(ep.attachments) != attachments for ep in plan.endpoints):
        raise ValueError("a testbench needs the same number of attachments on every endpoint")
    outputs = output_attachments(plan)
    conns, widths = _connections(plan, ports, attachments, outputs)
    # no beat for this long means a deadlock or a lost packet: twice a lone packet's latency
    # over every link of the fabric, and the stalls
    lone = plan.router.zero_load_latency(
        len(plan.links), beats, buffer_depth=plan.buffer_depth, link_latency=plan.link_latency
    )
    idle_limit = 2 * int(lone) + 8 * stall + 64
    clock = clock_ports(reset)
    every = [*clock, *(name for _, _, name in ports)]
    pad = max(map(len, every))
    instance = ",\n".join(
        f"    .{name:{pad}} ({name if name in clock else conns[name]})" for name in every
    )
    # the bench's own reset is active high; an active-low port gets its inverse
    reset_net = (
        "" if reset == "rst" else f"\n  wire {reset} = !rst;  // the fabric's active-low reset"
    )
    return _TEMPLATE.format(
        top=top,
        n=n,
        r=n * len(outputs),
        a=len(outputs),
        beats=beats,
        stall=stall,
        idle_limit=idle_limit,
        max_messages=MAX_MESSAGES,
        instance=instance,
        reset_net=reset_net,
        **widths,
    )


_TEMPLATE = """\
// {top}_tb.v: a self-checking testbench of {top} (written by zfabric verilog).
// Every endpoint sends one packet of L beats to every other endpoint; every beat must arrive
// intact, in order, at its destination. Prints FAIL: lines for what went wrong and a last line
// starting PASS or FAIL, then $finish. With Icarus Verilog:
//   iverilog -g2012 -o {top}_tb.vvp {top}_tb.v {top}.v && vvp {top}_tb.vvp
// (with the Verilog split into a file per module: -c {top}.f in place of {top}.v)
`timescale 1ns / 1ps

module {top}_tb;
  localparam integer N = {n};  // endpoints
  localparam integer A = {a};  // output streams per endpoint (attachments that receive)
  localparam integer R = {r};  // output streams
  localparam integer L = {beats};  // beats per packet
  localparam integer TDATAW = {W};
  localparam integer TDESTW = {DW};
  localparam integer TIDW = {IW};
  localparam integer PACKETS = N * (N - 1);
  localparam integer STALL = {stall};  // each output's tready is low one cycle in STALL (0: never)
  localparam integer IDLE_LIMIT = {idle_limit};  // cycles without a beat: deadlock or loss
  localparam integer MAX_MESSAGES = {max_messages};

  reg clk = 1'b0;
  reg rst = 1'b1;{reset_net}
  always #5 clk = ~clk;

  wire [N-1:0] s_tvalid, s_tready, s_tlast;
  wire [N*TDATAW-1:0] s_tdata;
  wire [N*TDESTW-1:0] s_tdest;
  wire [R-1:0] m_tvalid, m_tlast;
  reg [R-1:0] m_tready = 0;
  wire [R*TDATAW-1:0] m_tdata;
  wire [R*TIDW-1:0] m_tid;

  {top} dut (
{instance}
  );

  // tdata of beat `beat` of the packet from endpoint src to endpoint dst
  function [TDATAW-1:0] pattern(input integer src, input integer dst, input integer beat);
    integer i;
    reg [31:0] x;
    begin
      x = 32'h9E3779B9 * (src + 1) ^ 32'h85EBCA6B * (dst + 1) ^ 32'hC2B2AE35 * (beat + 1);
      for (i = 0; i < TDATAW; i = i + 1) begin
        if (i % 32 == 0) begin
          x = x ^ (x >> 16);
          x = x * 32'h7FEB352D;
          x = x ^ (x >> 15);
        end
        pattern[i] = x[i % 32];
      end
    end
  endfunction

  // the destination whose packet from src has `data` as beat `beat`, or -1
  function integer meant_for(input integer src, input integer beat, input [TDATAW-1:0] data);
    integer d;
    begin
      meant_for = -1;
      for (d = N - 1; d >= 0; d = d - 1)
        if (pattern(src, d, beat) === data) meant_for = d;
    end
  endfunction

  integer tick = 0;  // cycles since time 0
  integer errors = 0;  // FAIL lines printed or suppressed
  integer delivered = 0;  // packets received whole and intact
  integer beats_seen = 0;
  reg [N*N-1:0] got = 0;  // got[src * N + dst]: that packet has been received

  always @(posedge clk) tick <= tick + 1;

  genvar e, r;
  generate
    for (e = 0; e < N; e = e + 1) begin : sender
      integer k = 0;  // the k-th packet of e goes to (e + 1 + k) mod N
      integer b = 0;  // its beat on the stream
      always @(posedge clk)
        if (rst) begin
          k <= 0;
          b <= 0;
        end else if (s_tvalid[e] && s_tready[e]) begin
          b <= b == L - 1 ? 0 : b + 1;
          if (b == L - 1) k <= k + 1;
        end
      assign s_tvalid[e] = !rst && k < N - 1;
      assign s_tlast[e] = b == L - 1;
      assign s_tdest[e * TDESTW +: TDESTW] = (e + 1 + k) % N;
      assign s_tdata[e * TDATAW +: TDATAW] = pattern(e, (e + 1 + k) % N, b);
    end

    for (r = 0; r < R; r = r + 1) begin : receiver
      localparam integer E = r / A;  // the endpoint, r % A its output stream
      integer b = 0;  // beat of the packet on this stream
      integer src = 0;  // its source (tid of its first beat)
      integer to;
      always @(posedge clk)
        m_tready[r] <= STALL == 0 || (tick + 3 * r) % STALL != 0;

      always @(posedge clk)
        if (!rst && m_tvalid[r] && m_tready[r]) begin
          beats_seen = beats_seen + 1;
          if (b == 0) src = m_tid[r * TIDW +: TIDW];
          if (m_tid[r * TIDW +: TIDW] !== src || src >= N || src == E) begin
            if (errors < MAX_MESSAGES)
              $display("FAIL: cycle %0d: endpoint %0d stream %0d, beat %0d: tid %0d (%0s)",
                       tick, E, r % A, b, m_tid[r * TIDW +: TIDW],
                       b == 0 ? "not another endpoint" : "changed within the packet");
            errors = errors + 1;
          end else if (m_tdata[r * TDATAW +: TDATAW] !== pattern(src, E, b)) begin
            to = meant_for(src, b, m_tdata[r * TDATAW +: TDATAW]);
            if (errors < MAX_MESSAGES && to >= 0)
              $display("FAIL: cycle %0d: endpoint %0d got beat %0d of the packet from %0d to %0d",
                       tick, E, b, src, to);
            else if (errors < MAX_MESSAGES)
              $display("FAIL: cycle %0d: endpoint %0d, from %0d, beat %0d: tdata %h, expected %h",
                       tick, E, src, b, m_tdata[r * TDATAW +: TDATAW], pattern(src, E, b));
            errors = errors + 1;
          end else if (m_tlast[r] !== (b == L - 1)) begin
            if (errors < MAX_MESSAGES)
              $display("FAIL: cycle %0d: endpoint %0d, from %0d: tlast %b on beat %0d of %0d",
                       tick, E, src, m_tlast[r], b, L);
            errors = errors + 1;
          end else if (b == L - 1 && got[src * N + E]) begin
            if (errors < MAX_MESSAGES)
              $display("FAIL: cycle %0d: endpoint %0d got the packet from %0d twice", tick, E, src);
            errors = errors + 1;
          end else if (b == L - 1) begin
            got[src * N + E] = 1'b1;
            delivered = delivered + 1;
          end
          b = b == L - 1 ? 0 : b + 1;
        end
    end
  endgenerate

  integer idle = 0, last_seen = 0, src, dst, missing;
  initial begin
    repeat (4) @(posedge clk);
    @(negedge clk) rst = 1'b0;
    while (delivered < PACKETS && errors == 0 && idle < IDLE_LIMIT) begin
      @(negedge clk);
      idle = beats_seen == last_seen ? idle + 1 : 0;
      last_seen = beats_seen;
    end
    if (errors == 0 && delivered == PACKETS)
      $display("PASS: %0d packets of %0d beats, each endpoint to each other, intact in %0d cycles",
               PACKETS, L, tick);
    else begin
      if (errors == 0) begin
        missing = 0;
        for (src = 0; src < N; src = src + 1)
          for (dst = 0; dst < N; dst = dst + 1)
            if (src != dst && !got[src * N + dst]) begin
              if (missing < MAX_MESSAGES)
                $display("FAIL: the packet from %0d to %0d never arrived", src, dst);
              missing = missing + 1;
            end
        $display("FAIL: no beat delivered for %0d cycles: %0d packets missing (deadlock or loss)",
                 IDLE_LIMIT, missing);
      end else
        $display("FAIL: %0d wrong beats or packets; %0d of %0d packets delivered by cycle %0d",
                 errors, delivered, PACKETS, tick);
    end
    $finish;
  end
endmodule
"""
