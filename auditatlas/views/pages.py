"""Every page's declared view state, in the app's navigation order.

The explorer's lives in ``explorer.py`` (its link builder is used by core modules, which
must not import the registries this module reads). Names have one meaning across pages: a
score cut is ``threshold``; a number of steps is ``top_k``; a share of a set's scored steps,
in percent, is ``top_pct``; how a set decides which steps it flags is ``rule`` (``own``: its
own pred_label, ``top_pct``: its top share).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..analyses import detector_comparison as dv
from ..analyses.board_registry import PILLARS
from ..analyses.board_registry import registry as board_registry
from ..analyses.review_queue import ORDERS as REVIEW_ORDERS
from ..detectors import DEFAULT_FEATURE_SET, FEATURE_SETS
from ..detectors.registry import engine_detectors
from ..judges.protocols import PROTOCOL_RUNS
from ..patterns import DEFAULT_CLUSTERS, DEFAULT_K, MAX_CLUSTERS, MAX_K
from ..search import LABEL_CHOICES as SEARCH_LABELS
from ..view_state.explorer_state import EXPLORER
from ..view_state.state_fields import Field, PageState

RULES = ("own", "top_pct")
# The detector views' own words for the same two rules (the SQL's ``threshold`` parameter).
DETECTOR_VIEW_MODES = dict(zip(RULES, dv.THRESHOLD_MODES))


def board_corpus_key(board: str) -> str:
    """The parameter holding the corpus a board is scored on."""
    return f"board_{board}_corpus"


def _boards() -> PageState:
    boards = board_registry()
    pillars = tuple(p for p in PILLARS if any(b.task.pillar == p for b in boards.values()))
    return PageState(
        path="/boards", title="Boards",
        what="PRE / LIVE / POST boards recomputed from the store, published vs recomputed",
        view="auditatlas.views.boards_view:page",
        fields=(Field("tab", "choice", default=pillars[0], choices=pillars, help="the open pillar"),
                Field("per_seed", "bool", default=False,
                      help="1: every seed of a re-scored detector on its own row (default: one row per detector, "
                           "mean ± sd over its seeds)"),
                Field("curves", "bool", default=False,
                      help="1: the LIVE boards' ROC-AUC curves by prefix drawn under their tables (default: the "
                           "tables alone)"),
                *(Field(board_corpus_key(name), "str", help=f"the corpus the {name} board is scored on "
                                                             "(default: the first it applies to)")
                  for name in boards)),
    )


OVERVIEW = PageState(
    path="/", title="Overview",
    what="what is loaded; action success (Table 3), anomaly rate by capability (Figure 3), silent failures (Table 4)",
    view="auditatlas.views.overview_view:page",
)

BOARDS = _boards()

PROPAGATION_TABS = ("Heatmap", "Chains", "Recall by role", "Silent vs loud", "Failure modes")
PROPAGATION = PageState(
    path="/propagation", title="Propagation", view="auditatlas.views.propagation_view:page",
    what="propagation heatmaps per backbone, chains behind a cell, chain browser, recall by chain role, "
         "failure modes, silent vs loud",
    fields=(
        Field("tab", "choice", default=PROPAGATION_TABS[0], choices=PROPAGATION_TABS, help="the open tab"),
        Field("map_backbone", "str",
              help="the backbone whose heatmap is drawn (default: the heatmap cell's backbone, else the first)"),
        Field("side_by_side", "bool", default=False,
              help="1: every backbone's heatmap drawn side by side (default: one backbone's, as map_backbone says)"),
        Field("cell_backbone", "str", help="the heatmap cell's backbone"),
        Field("src_action", "str", help="the heatmap cell's failed source action"),
        Field("later_action", "str", help="the heatmap cell's later failed action"),
        Field("cell_page", "int", default=1, low=1, help="page of the cell's chains"),
        Field("origin", "list", default=[], help="chain browser: origin actions"),
        Field("length", "list", default=[], item="int", count=2, low=2,
              help="chain browser: shortest and longest chain (default: every length)", fallback="showing every length"),
        Field("chain_page", "int", default=1, low=1, help="page of the chain browser"),
        Field("rule", "choice", default="own", choices=RULES,
              help="recall by role: a set flags its own labels, or its top_pct share of scored steps"),
        Field("top_pct", "float", default=10.0, low=0.1, high=100.0,
              help="recall by role, rule top_pct: the share flagged, in % of the set's scored steps in the slice"),
    ),
)

DETECTOR_TABS = ("AUROC grid", "Overall", "Cost", "Prediction sets")
METRIC_CHOICES = tuple(dv.METRIC_LABELS[m] for m in dv.METRICS)
DETECTORS = PageState(
    path="/detectors", title="Detectors", view="auditatlas.views.detectors_view:page",
    what="per-action AUROC grid per backbone, a cell's false positives and negatives, overall comparison vs "
         "random, cost",
    fields=(
        Field("tab", "choice", default=DETECTOR_TABS[0], choices=DETECTOR_TABS, help="the open tab"),
        Field("detectors_corpus", "str", help="the corpus compared (default: the first with step-level sets)"),
        Field("rule", "choice", default="own", choices=RULES,
              help="own: a set's own pred_label where every scored step has one, else its top_pct; "
                   "top_pct: every set flags its top_pct share of labeled test steps"),
        Field("top_pct", "float", default=dv.DEFAULT_TOP_K, low=0.5, high=100.0,
              help="the share flagged, in % of the labeled test steps"),
        Field("grid_backbone", "str", help="the backbone of the grid's table and errors (default: the first)"),
        Field("side_by_side", "bool", default=False,
              help="1: every backbone's heatmap drawn side by side above the table (default: none, the table alone)"),
        Field("action", "str", help="the cell's action (default: all actions)"),
        Field("detector", "str", help="the cell's detector (default: the first)"),
        Field("set", "str", help="the cell's prediction set (default: the detector's first)"),
        # A bound widget writes the option's text into the URL, so the link names a metric as the chart does.
        Field("metric", "choice", default=METRIC_CHOICES[0], choices=METRIC_CHOICES, help="the overall chart's metric"),
    ),
)

DEFAULT_RESCORE_DETECTORS = ["random", "iforest", "logreg"]
# The judge's protocols as the command line spells them (``auditatlas judge --protocol``).
JUDGE_PROTOCOLS = tuple(name.replace("_", "-") for name in PROTOCOL_RUNS)
RESCORE = PageState(
    path="/rescore", title="Re-score", view="auditatlas.views.rescore_view:page",
    what="re-score detectors on the slice (progress, cancel); run an LLM judge on the slice through an "
         "OpenAI-compatible endpoint (progress, cancel) and every judge set's calls, tokens, cost, latency and "
         "abstentions; cross-backbone ROC-AUC matrices",
    fields=(
        Field("rescore_detectors", "list", default=DEFAULT_RESCORE_DETECTORS, choices=tuple(engine_detectors()),
              help="detectors to fit"),
        Field("rescore_feature_set", "choice", default=DEFAULT_FEATURE_SET, choices=tuple(FEATURE_SETS),
              help="the features they fit on"),
        Field("rescore_seeds", "int", default=1, low=1, high=10, help="seeds 0..N-1"),
        Field("judge_protocol", "choice", default=JUDGE_PROTOCOLS[0], choices=JUDGE_PROTOCOLS,
              help="the LLM judge's protocol"),
        Field("judge_model", "str", default="", help="the model name the judge's endpoint serves"),
        Field("judge_base_url", "str", default="",
              help="the judge's OpenAI-compatible base URL, e.g. http://localhost:8000/v1"),
        Field("judge_api_key_env", "str", default="OPENAI_API_KEY",
              help="the NAME of the environment variable holding the judge's API key (never the key)"),
        Field("judge_with_truth", "bool", default=False, help="1: the judge is shown the task's correct answer"),
        Field("judge_max_connections", "int", default=4, low=1, high=64, help="the judge's calls in flight at once"),
        Field("judge_max_calls", "int", low=1, help="the judge stops after this many new calls (default: no limit)",
              fallback="no call limit"),
        Field("judge_price_in", "float", low=0.0, help="price per million input tokens (default: no cost counted)",
              fallback="no price"),
        Field("judge_price_out", "float", low=0.0, help="price per million output tokens", fallback="no price"),
        Field("judge_max_cost", "float", low=0.0, help="the judge stops once its new calls cost this much "
                                                        "(needs both prices; default: no limit)",
              fallback="no cost limit"),
        Field("cross_detectors", "list", default=["logreg"], choices=tuple(engine_detectors()),
              help="detectors for the cross-backbone matrix"),
        Field("cross_corpus", "str", help="the matrix's corpus (default: the first scorable)"),
        Field("cross_seeds", "int", default=1, low=1, high=5, help="seeds of the matrix"),
    ),
)

REVIEW = PageState(
    path="/review", title="Review", view="auditatlas.views.review_view:page",
    what="a queue of the slice's steps ordered by label doubt, a random sample, detector flags or the judges "
         "against the human; a verdict (anomaly / normal / unsure) on each, stored as a label process of its own; "
         "agreement (kappa between reviewers and against the release, the released labels' error rate)",
    fields=(
        Field("queue", "choice", default="doubt", choices=tuple(REVIEW_ORDERS), help="the review order"),
        Field("seed", "int", default=0, low=0, help="the random order's seed"),
        Field("position", "int", default=0, low=0, help="the open step's place in the queue (0 = first)",
              expects="a place in the queue (0, 1, 2, …)", fallback="opening the first step"),
        Field("reviewer", "str", default="", max_chars=200, help="the reviewer's name, given with every verdict"),
    ),
)

SEARCH = PageState(
    path="/search", title="Search", view="auditatlas.views.search_view:page",
    what="ranked full-text search over every step of the slice (BM25, phrases, AND/OR/NOT, agent: and action:), "
         "highlighted snippets, each hit opening its step in the Explorer",
    fields=(
        Field("q", "str", default="", help="the search query (tantivy's query language: words, \"a phrase\", "
                                            "AND/OR/NOT, agent:NAME, action:NAME)"),
        Field("label", "choice", default=SEARCH_LABELS[0], choices=SEARCH_LABELS, help="only steps with this label"),
        Field("page", "int", default=1, low=1, help="page of hits", fallback="showing the first page"),
    ),
)

PATTERNS = PageState(
    path="/patterns", title="Patterns", view="auditatlas.views.patterns_view:page",
    what="steps like this one (the k most similar steps of the slice, with their labels and scores) and failure "
         "clusters of the slice's anomalous steps",
    fields=(
        Field("run", "str", help="the run of the step whose neighbours are shown (its id)"),
        Field("step", "int", low=0, help="the step whose neighbours are shown (its index in the run)",
              expects="a step number (0, 1, 2, …)", fallback="no step is chosen"),
        Field("k", "int", default=DEFAULT_K, low=1, high=MAX_K, help="how many similar steps are listed"),
        Field("cluster", "int", low=1, help="the open failure cluster (1 = the largest)",
              expects="a cluster number (1, 2, …)", fallback="no cluster is open"),
        Field("seed", "int", default=0, low=0, help="the clustering's seed"),
        Field("clusters", "int", default=DEFAULT_CLUSTERS, low=2, high=MAX_CLUSTERS,
              help="how many failure clusters the slice's anomalous steps are grouped into"),
    ),
)

TOUR = PageState(
    path="/tour", title="Tour", view="auditatlas.views.tour_view:page", badge=False,
    what="a guided tour saved in the store, one stop at a time: the author's sentence above the view, next / "
         "previous; the draft being made (add the current view from any page's sidebar, reorder, remove, save "
         "under a name); every saved tour",
    fields=(
        Field("name", "str", default="", help="the tour's name, as saved (default: the draft and the list of tours)"),
        Field("stop", "int", default=1, low=1, help="the open stop (1 = the first)",
              expects="a stop number (1, 2, …)", fallback="opening the first stop"),
    ),
)

PAGES: tuple[PageState, ...] = (OVERVIEW, BOARDS, EXPLORER, SEARCH, PATTERNS, PROPAGATION, DETECTORS, RESCORE, REVIEW,
                                TOUR)


def patterns_url(run_id: str | None, step_idx: int | None = None, slice: Mapping[str, Iterable[Any]] | None = None,
                 base: str | None = None, **values: Any) -> str:
    """The Patterns page on the steps like step ``step_idx`` of ``run_id``, inside ``slice``."""
    return PATTERNS.url(slice, {"run": run_id, "step": None if step_idx is None else int(step_idx), **values}, base)


def page(path: str) -> PageState:
    """The declaration of the page at ``path`` (``/``, ``/explorer``, …)."""
    for declared in PAGES:
        if declared.path == path:
            return declared
    raise KeyError(f"no page at {path}; pages: {', '.join(p.path for p in PAGES)}")
