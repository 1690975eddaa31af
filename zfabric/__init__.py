"""zfabric: a generator of wormhole/VC interconnection fabrics (compiler side: pure Python)."""

from .deadlock import RoutingAnalysis, analyse_routing, check_deadlock_free
from .errors import DeadlockError, PlanError, SpecError
from .plan import FabricPlan, PlanView, plan_from_json
from .spec import FabricSpec, load_spec
from .topologies import build_fabric, compile_plan

__all__ = [
    "DeadlockError",
    "FabricPlan",
    "FabricSpec",
    "PlanError",
    "PlanView",
    "RoutingAnalysis",
    "SpecError",
    "analyse_routing",
    "build_fabric",
    "check_deadlock_free",
    "compile_plan",
    "load_spec",
    "plan_from_json",
]
