"""Route units, generated from the plan's routing function (the single source of truth).

A route unit looks at the routing head of the flit at the front of one input VC and gives the
candidate output VCs (a mask over the switch's flat output-VC numbering, see
:class:`SwitchPorts`) and the head the next switch sees. With first-free selection the
allocator takes the lowest usable bit of the mask, so a routing decision
``Decision(hops=(Hop(port, vcs), ...))`` must list its candidates in ascending (port, vc) order
to be a mask; :func:`candidate_mask` checks it. Round-robin selection picks by output port
whatever the order, so there the mask is the candidate set: the adaptive routings (``duato``,
``dort_adaptive``), whose escape hop comes last, need it (:class:`RouteRows` refuses them under
first-free selection).

- Destination routing (``updown`` and any routing whose head is an endpoint id):
  :class:`TableRoute`, a ``m.Switch`` over every destination, filled by calling the routing
  function for each one.
- ``dor`` and ``dort``: :class:`DORRoute` and :class:`DORTRoute` compute the same decision by
  arithmetic on coordinates (the destination's, decoded from its id, and the switch's own),
  so that every switch of a kind (a torus switch, an nDT card) is the same module with its
  coordinates as an input. Tests check them exhaustively against the routing function; tables
  stay available (``arithmetic=False``). ``duato``: :class:`DuatoRoute`, DOR's escape hop
  plus the adaptive VCs of every productive direction.
- ``tsdor`` and ``dort_adaptive`` also read the input VC, through a small routing state (the
  traffic class; whether the packet escaped): :class:`DORTRoute` once per traffic class (its
  dimension order, ties and VCs), :class:`DORTAdaptiveRoute` (DORT's hop plus the adaptive VCs
  of this card's productive ports and, where DORT crosses, the internal link's) once per
  escaped / not; each input VC gets its state's unit, and every card of a fabric stays one
  module. Tables (``arithmetic=False``, or an endpoint numbering the units do not decode) are
  built once per distinct state key (:meth:`~zfabric.routing.base.RoutingFunction.state_key`).
- Sliced routing (``sliced``): :class:`SlicedRoute`, the header decoder of
  ``zfabric/routing/sliced.py``. It pops fields of fixed widths and holds no table: the
  switch's level fixes the widths, its Znode id (SID) is compared with the header's, and the
  port groups come from the plan's port roles.
- The HyperZ routings (``odim``, ``deter``, ``cliod``, ``aliod``): :class:`HyperzRoute`, one
  comparator per dimension between the switch's GHC coordinates and the destination's, the
  flat address's digits for the tree part (zone and down label); every switch of a level is
  one module, its zone and coordinates on ``identity``. Tables stay available
  (``arithmetic=False``).
- Transit source routes (``transit``): :class:`TransitRoute`, an RN1 chip's input: it drops
  the head byte where the input swallows, reads the chip's 2-bit slice of the byte in front
  and offers that direction's outputs (both wires of a dilated direction, as equal
  candidates the switch's output selection picks between). No table: the slice, the
  swallows and the masks come from the plan.
- The baselines sliced addressing is compared against (Peratikou's Znode thesis, 2014):
  ``flat``, :class:`FlatRoute`, reads its level's label of the destination address (and, at
  the top, compares the Znode id with the SID); ``source_destination``,
  :class:`SourceDestinationRoute`, compares the source and destination addresses above its
  level to turn or climb. Neither rewrites the head.
"""

from .dor import DORRoute
from .dort import DORTAdaptiveRoute, DORTRoute
from .duato import DuatoRoute
from .flat import FlatRoute
from .hyperz import HyperzRoute
from .ports import RouteUnitSignature, SwitchPorts, candidate_mask
from .rows import RouteRow, RouteRows, reachable_states, reachable_turns, route_row
from .sliced import SlicedRoute
from .source_destination import SourceDestinationRoute
from .table import TableRoute
from .transit import TransitRoute

__all__ = [
    "SwitchPorts",
    "candidate_mask",
    "RouteUnitSignature",
    "TableRoute",
    "TransitRoute",
    "SlicedRoute",
    "FlatRoute",
    "SourceDestinationRoute",
    "DORRoute",
    "DORTRoute",
    "DORTAdaptiveRoute",
    "DuatoRoute",
    "HyperzRoute",
    "RouteRow",
    "RouteRows",
    "route_row",
    "reachable_states",
    "reachable_turns",
]
