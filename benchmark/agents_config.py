"""The agents config: every agent of a session or benchmark run in one TOML file.

Format (see ``default_agents.toml`` and docs/models.md)::

    [[agents]]
    name = "gpt-4o"                        # unique; letters, digits, - _ . :
    kind = "openai"                        # "openai" (any OpenAI-compatible server) or "human"
    base_url = "https://api.openai.com/v1" # or "sim": the in-process sim_mock model server
    model = "gpt-4o"                       # model id sent to the server
    api_key_env = "OPENAI_API_KEY"         # env var holding the key; "" = no key needed
    point_format = "xy_pixels"             # molmo, molmo2, gemini, qwen, robopoint, xy_pixels, auto
    prompt_style = "default"               # default, two_shot, cot, unparsed (PointArena Table 1)
    temperature = 0                        # greedy; "omit" leaves it out of the request
    timeout_s = 60
    max_retries = 2                        # the openai client's retries: 408, 429, 5xx, timeouts

Optional keys for ``openai``, passed through to the request (``model_client``): ``max_tokens``
(default 1024, ``"omit"``), ``max_completion_tokens``, ``reasoning_effort``, ``extra_body`` (a table
merged into the JSON body); and ``max_image_side_px``, ``image_encoding`` (jpeg/png),
``qwen_min_pixels``, ``qwen_max_pixels`` (the served checkpoint's processor limits; default the
released Qwen2.5-VL checkpoints' 3136 / 12845056). OpenAI reasoning models (o-series, gpt-5) get
``max_completion_tokens`` for ``max_tokens`` and no temperature, by model family. A ``human`` agent
takes ``name``, ``kind`` and ``timeout_s`` only. Unknown keys are errors (a typo must not be ignored).
"""

from __future__ import annotations

import logging
import os
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .agents import Agent, HumanAgent, OpenAIAgent
from .points import POINT_FORMATS, QWEN_MAX_PIXELS, QWEN_MIN_PIXELS
from .prompts import PROMPT_STYLES

from pointlab.benchmark.errors import BenchmarkError

__all__ = [
    "AgentConfig",
    "AgentsFile",
    "AgentsConfigError",
    "load_agents_config",
    "model_agent_config",
    "load_agents",
    "build_agent",
    "SIM_BASE_URL",
    "DEFAULT_AGENTS_FILE",
]

log = logging.getLogger(__name__)

SIM_BASE_URL = "sim"
DEFAULT_AGENTS_FILE = "default_agents.toml"

PointFormat = Literal["molmo", "molmo2", "gemini", "grid1000", "qwen", "qwen3", "robopoint", "xy_pixels", "auto"]
PromptStyle = Literal["default", "two_shot", "cot", "unparsed"]
assert set(get_args(PointFormat)) == set(POINT_FORMATS) and set(get_args(PromptStyle)) == set(PROMPT_STYLES)


class AgentsConfigError(BenchmarkError, ValueError):
    """The agents config is missing, unreadable or invalid (the message names the file and field)."""


class AgentConfig(BaseModel):
    """One ``[[agents]]`` entry (validated; see the module docstring)."""

    # TOML has inf and nan: timeout_s = inf would wait for ever, backoff_s = inf sleep for ever
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
    kind: Literal["openai", "human"]
    base_url: str | None = None
    model: str | None = None
    api_key_env: str = ""
    point_format: PointFormat = "xy_pixels"
    prompt_style: PromptStyle = "default"
    temperature: float | None = Field(0.0, ge=0.0, le=2.0)
    timeout_s: float = Field(60.0, gt=0.0)
    max_retries: int = Field(2, ge=0, le=10)
    max_tokens: int | None = Field(1024, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None
    extra_body: dict[str, Any] = Field(default_factory=dict)
    max_image_side_px: int | None = Field(None, ge=28)
    image_encoding: Literal["jpeg", "png"] = "jpeg"
    qwen_min_pixels: int = Field(QWEN_MIN_PIXELS, ge=1)
    qwen_max_pixels: int = Field(QWEN_MAX_PIXELS, ge=1)

    @field_validator("temperature", "max_tokens", mode="before")
    @classmethod
    def _omit(cls, v: Any) -> Any:
        # TOML has no null: "omit" leaves the parameter out of the request (the server's default)
        return None if v == "omit" else v

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is not None and v != SIM_BASE_URL and not v.startswith(("http://", "https://")):
            raise ValueError(f'base_url must be "sim" or start with http:// or https://, got {v!r}')
        return v

    @model_validator(mode="after")
    def _kind_fields(self) -> "AgentConfig":
        if self.qwen_min_pixels > self.qwen_max_pixels:
            raise ValueError(
                f"agent {self.name!r}: qwen_min_pixels ({self.qwen_min_pixels}) is above "
                f"qwen_max_pixels ({self.qwen_max_pixels})"
            )
        if self.kind == "openai":
            if not self.base_url or not self.model:
                raise ValueError(f"agent {self.name!r}: kind 'openai' needs base_url and model")
            if self.point_format == "auto" and self.prompt_style != "unparsed":
                raise ValueError(
                    f"agent {self.name!r}: point_format 'auto' needs prompt_style 'unparsed' "
                    "(auto has no answer instruction)"
                )
        else:
            extra = [k for k in ("base_url", "model") if getattr(self, k) is not None]
            if extra or self.api_key_env:
                raise ValueError(f"agent {self.name!r}: kind 'human' takes no {', '.join(extra or ['api_key_env'])}")
        return self


class AgentsFile(BaseModel):
    """The whole file: a non-empty list of agents with unique names."""

    model_config = ConfigDict(extra="forbid")

    agents: list[AgentConfig] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> "AgentsFile":
        names = [a.name for a in self.agents]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"agent names repeat: {', '.join(dup)}")
        return self


def _format_errors(e: ValidationError) -> str:
    parts = []
    for err in e.errors():
        loc = ".".join(str(p) for p in err["loc"])
        parts.append(f"{loc}: {err['msg']}" if loc else err["msg"])
    return "; ".join(parts)


def load_agents_config(path: str | os.PathLike | None = None) -> AgentsFile:
    """Read and validate an agents TOML file (``None``: the embedded ``default_agents.toml``).

    Raises:
        AgentsConfigError: file missing or unreadable, bad TOML, or invalid entries.
    """
    if path is None:
        where = f"<embedded {DEFAULT_AGENTS_FILE}>"
        text = resources.files("pointlab.benchmark").joinpath(DEFAULT_AGENTS_FILE).read_text(encoding="utf-8")
    else:
        where = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise AgentsConfigError(f"{where}: cannot read agents config: {e}") from e
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise AgentsConfigError(f"{where}: bad TOML: {e}") from e
    try:
        return AgentsFile.model_validate(data)
    except ValidationError as e:
        raise AgentsConfigError(f"{where}: {_format_errors(e)}") from e


def model_agent_config(path: str | os.PathLike | None, name: str) -> AgentConfig:
    """The model agent ``name`` of the agents file at ``path`` (benchmark runs ask models, not people).

    Raises:
        AgentsConfigError: the file cannot be read (``load_agents_config``), has no agent ``name``, or
            ``name`` is not an ``openai`` agent.
    """
    cfgs = {a.name: a for a in load_agents_config(path).agents}
    if name not in cfgs:
        raise AgentsConfigError(f"no agent {name!r} in the agents config (have: {', '.join(cfgs)})")
    cfg = cfgs[name]
    if cfg.kind != "openai":
        raise AgentsConfigError(f"agent {name!r} is kind {cfg.kind!r}; benchmark runs need a model agent")
    return cfg


def build_agent(cfg: AgentConfig, *, sim_base_url: str | None = None) -> Agent:
    """One ``Agent`` from its config; ``base_url = "sim"`` becomes ``sim_base_url``.

    Raises:
        AgentsConfigError: ``base_url = "sim"`` without a ``sim_base_url``.
    """
    if cfg.kind == "human":
        return HumanAgent(cfg.name, timeout_s=cfg.timeout_s)
    base_url = cfg.base_url
    if base_url == SIM_BASE_URL:
        if not sim_base_url:
            raise AgentsConfigError(
                f'agent {cfg.name!r} uses base_url = "sim" but no sim model server is running (pass sim_base_url)'
            )
        base_url = sim_base_url
    if cfg.api_key_env and not os.environ.get(cfg.api_key_env):
        log.warning("agent %s: environment variable %s is not set; its calls will fail", cfg.name, cfg.api_key_env)
    assert base_url is not None and cfg.model is not None  # AgentConfig's check: an openai agent has both
    return OpenAIAgent(
        cfg.name,
        base_url=base_url,
        model=cfg.model,
        api_key_env=cfg.api_key_env,
        point_format=cfg.point_format,
        prompt_style=cfg.prompt_style,
        temperature=cfg.temperature,
        timeout_s=cfg.timeout_s,
        max_retries=cfg.max_retries,
        max_tokens=cfg.max_tokens,
        max_completion_tokens=cfg.max_completion_tokens,
        reasoning_effort=cfg.reasoning_effort,
        extra_body=cfg.extra_body,
        max_image_side_px=cfg.max_image_side_px,
        image_encoding=cfg.image_encoding,
        qwen_min_pixels=cfg.qwen_min_pixels,
        qwen_max_pixels=cfg.qwen_max_pixels,
    )


def load_agents(path: str | os.PathLike | None = None, *, sim_base_url: str | None = None) -> dict[str, Agent]:
    """Agents by name, in file order, from ``path`` (``None``: the default sim-oracle, sim-noisy, human).

    Args:
        path: agents TOML file, or ``None`` for the embedded default.
        sim_base_url: URL (ending in ``/v1``) of the running sim model server, used for
            ``base_url = "sim"`` (see ``pointlab.sim_mock.model_server.serve_in_thread``).

    Raises:
        AgentsConfigError: as ``load_agents_config``, or a ``"sim"`` agent without ``sim_base_url``.
    """
    cfg = load_agents_config(path)
    return {a.name: build_agent(a, sim_base_url=sim_base_url) for a in cfg.agents}
