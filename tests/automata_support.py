"""Helpers shared by the automata tests."""

from __future__ import annotations

from collections import deque

from constrain_api.automata import ByteDFA


def shortest_completion(dfa: ByteDFA, state: int) -> bytes | None:
    """The shortest byte string leading from ``state`` to acceptance (BFS), or None."""
    if state < 0:
        return None
    prev: dict[int, tuple[int, int] | None] = {state: None}
    queue = deque([state])
    while queue:
        s = queue.popleft()
        if dfa.accept[s]:
            out = []
            while prev[s] is not None:
                s, b = prev[s]
                out.append(b)
            return bytes(reversed(out))
        for b, t in enumerate(dfa.rows[s]):
            if t >= 0 and t not in prev:
                prev[t] = (s, b)
                queue.append(t)
    return None
