"""Property-based fuzzing of the websocket message schema (issue 14): whatever text or bytes a
client sends, ``parse_client_message`` returns a typed message or raises ``ClientMessageError``
with a reason, never anything else; and a message it accepts holds exactly the declared types."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pointlab.ui.ws import ClientMessageError, parse_client_message

_FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=20,
)
types = st.sampled_from(["instruction", "judge", "sus", "ping", "start_block", "compare", "admin", "", "INSTRUCTION"])
objects = st.fixed_dictionaries(
    {"type": types},
    optional={
        "text": json_values,
        "trial_id": json_values,
        "judgement": json_values,
        "block": json_values,
        "responses": json_values,
        "episode_id": json_values,
        "preference": json_values,
        "progress_a": json_values,
        "progress_b": json_values,
        "reason": json_values,
    },
)


def _check(raw: dict, allowed=None):
    try:
        msg = parse_client_message(raw, 4096) if allowed is None else parse_client_message(raw, 4096, allowed)
    except ClientMessageError as e:
        assert str(e)  # a reason the client is sent back
        return None
    return msg


@_FAST
@given(st.text(max_size=300))
def test_any_text_is_a_message_or_a_reason(text):
    _check({"type": "websocket.receive", "text": text})


@_FAST
@given(st.binary(max_size=200))
def test_binary_is_refused_with_a_reason(data):
    assert _check({"type": "websocket.receive", "bytes": data}) is None


@_FAST
@given(objects)
def test_json_objects_of_every_shape(obj):
    text = json.dumps(obj, allow_nan=True)
    msg = _check({"type": "websocket.receive", "text": text})
    if msg is None:
        return
    # accepted: the declared field types hold exactly (no bool as int, no float as int)
    if msg.type == "instruction":
        assert isinstance(msg.text, str)
    elif msg.type == "judge":
        assert type(msg.trial_id) is int and isinstance(msg.judgement, str)
    elif msg.type == "sus":
        assert type(msg.block) is int and isinstance(msg.responses, list)
    elif msg.type == "compare":  # strict: a progress of 50.0 or "50" is refused, not rounded
        assert all(type(v) is int for v in (msg.episode_id, msg.progress_a, msg.progress_b))
        assert isinstance(msg.preference, str) and isinstance(msg.reason, str) and len(msg.reason) <= 1000
    else:
        assert msg.type in ("ping", "start_block")


@_FAST
@given(st.integers(min_value=0, max_value=3000))
def test_deep_nesting_and_big_messages_are_refused(depth):
    text = "[" * depth + "]" * depth
    assert _check({"type": "websocket.receive", "text": text}) is None
