"""The registered probes, one module each (``alignment``, ``position``, ``verbosity``, ...), their shared tests and
flag rules in :mod:`judgecal.audit.probes.rules`. Each is added with one :func:`register` line below; a probe from
outside is found through the ``judgecal.probes`` entry-point group (:mod:`judgecal.audit.plugins`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgecal.audit.plugins import PLUGINS_ENV as PLUGINS_ENV
from judgecal.audit.plugins import load_entry_points, load_env_modules
from judgecal.audit.probe import Probe
from judgecal.audit.probes.alignment import AlignmentProbe as AlignmentProbe
from judgecal.audit.probes.alignment import GivenAlignment as GivenAlignment
from judgecal.audit.probes.authority import AuthorityProbe as AuthorityProbe
from judgecal.audit.probes.bandwagon import BandwagonProbe as BandwagonProbe
from judgecal.audit.probes.chain_of_thought import ChainOfThoughtProbe as ChainOfThoughtProbe
from judgecal.audit.probes.compassion_fade import CompassionFadeProbe as CompassionFadeProbe
from judgecal.audit.probes.distraction import DistractionProbe as DistractionProbe
from judgecal.audit.probes.diversity import DiversityProbe as DiversityProbe
from judgecal.audit.probes.fallacy_oversight import FallacyOversightProbe as FallacyOversightProbe
from judgecal.audit.probes.injection import InjectionProbe as InjectionProbe
from judgecal.audit.probes.instability import InstabilityProbe as InstabilityProbe
from judgecal.audit.probes.manipulability import ManipulabilityProbe as ManipulabilityProbe
from judgecal.audit.probes.padding import PaddingProbe as PaddingProbe
from judgecal.audit.probes.position import GivenPosition as GivenPosition
from judgecal.audit.probes.position import PositionProbe as PositionProbe
from judgecal.audit.probes.prompt_sensitivity import PromptSensitivityProbe as PromptSensitivityProbe
from judgecal.audit.probes.refinement_aware import RefinementAwareProbe as RefinementAwareProbe
from judgecal.audit.probes.rules import ci_test as ci_test
from judgecal.audit.probes.rules import excess_test as excess_test
from judgecal.audit.probes.rules import no_sign as no_sign
from judgecal.audit.probes.rules import underpowered as underpowered
from judgecal.audit.probes.self_preference import SelfPreferenceProbe as SelfPreferenceProbe
from judgecal.audit.probes.sentiment import SentimentProbe as SentimentProbe
from judgecal.audit.probes.transitivity import TransitivityProbe as TransitivityProbe
from judgecal.audit.probes.traps import TrapProbe as TrapProbe
from judgecal.audit.probes.verbosity import VerbosityProbe as VerbosityProbe
from judgecal.audit.probes.verbosity_rewrite import VerbosityRewriteProbe as VerbosityRewriteProbe
from judgecal.audit.thresholds import declare_thresholds
from judgecal.catalogue import describe
from judgecal.errors import ConfigError


def with_given_alignment(given: Mapping[str, Mapping[str, Any]]) -> list[Probe]:
    """The registered probes, the alignment and position figures read from ``given`` instead of computed."""
    return [GivenAlignment(given) if type(p) is AlignmentProbe else GivenPosition() if type(p) is PositionProbe
            else p for p in PROBES]


PROBES: list[Probe] = []  # in the order they run; register() adds to it
FLAG_ORDER: list[str] = []  # the order of a judge's flags, by probe name


def register(probe: Probe, flag_position: int | None = None) -> Probe:
    """Add ``probe`` to the audit: it runs after those registered before it (so it reads their metrics),
    its flags come at ``flag_position`` of a judge's flags (default: last), and its description, metrics and
    flags enter the catalogue that the verdict rules, the terminal, the HTML/PDF report, the explorer and
    ``validate`` read. Registering a name twice is refused."""
    if any(p.name == probe.name for p in PROBES):
        raise ConfigError(f"a probe named {probe.name!r} is already registered")
    if probe.info is not None:
        describe(probe.info, probe.metric_infos, probe.flag_infos)
    for spec in probe.thresholds:
        declare_thresholds(spec)
    PROBES.append(probe)
    FLAG_ORDER.insert(len(FLAG_ORDER) if flag_position is None else flag_position, probe.name)
    return probe


def optional_probes() -> dict[str, tuple[str, str]]:
    """headline metric -> (probe title, how to run it), for every registered probe that can be not run."""
    return {p.info.headline: (p.info.title, p.info.how_to_run) for p in PROBES if p.info is not None}


def pairwise_only() -> tuple[str, ...]:
    """The headline metrics of the probes that apply to judges of pairs only (two responses shown together)."""
    return tuple(p.info.headline for p in PROBES if p.info is not None and p.info.applies_to == ("pairwise",))


# the built-in probes, in the order they run: one module and one line each
register(AlignmentProbe())
register(PositionProbe())
register(VerbosityProbe())
register(SelfPreferenceProbe())
register(InstabilityProbe())
register(PromptSensitivityProbe())
register(PaddingProbe())
register(InjectionProbe())
FLAG_ORDER[:] = ["position", "verbosity", "self_preference", "padding", "instability", "prompt_sensitivity",
                 "injection", "alignment"]
register(TrapProbe(), FLAG_ORDER.index("alignment"))
register(TransitivityProbe(), FLAG_ORDER.index("alignment"))
# the template-perturbation probes (judgecal probe battery), their flags after those above
register(BandwagonProbe())
register(AuthorityProbe())
register(CompassionFadeProbe())
register(DistractionProbe())
register(DiversityProbe())
register(RefinementAwareProbe())
register(ChainOfThoughtProbe())
register(SentimentProbe())
register(FallacyOversightProbe())
register(VerbosityRewriteProbe())
register(ManipulabilityProbe())  # the verdict challenged in the same conversation (judgecal probe manipulability)


def load_plugins() -> list[str]:
    """Register the probes of every ``judgecal.probes`` entry point, then import the modules named in
    ``$JUDGECAL_PROBES`` (each registers its own), so the CLI, the explorer and ``validate`` run them as they run
    the built-in ones (:mod:`judgecal.audit.plugins`); returns the names loaded. A plugin that cannot be loaded
    stops with one line naming it, never silently."""
    return [*load_entry_points(register, lambda: PROBES), *load_env_modules()]


load_plugins()
