"""The app's cached services are bounded (issue 39, item 10): each distinct settings combination or typed key
holds an embedder and a store (about 110 MB), so a dozen visitors with their own keys must not keep a dozen of
them for the life of the server. The real `st.cache_resource` of `components.state`, with a stand-in for the
services so nothing loads."""

from __future__ import annotations

import gc
import weakref

from components import state
from core.infra.keys import KeyRing
from core.services import MAX_CACHED_SERVICES
from core.settings import Settings


class Held:
    """Stands in for a Services object: something the cache keeps alive, or lets go."""


def test_the_services_cache_keeps_at_most_a_few_combinations_alive(monkeypatch, tmp_path):
    monkeypatch.setattr(state, "build_services", lambda settings, keys: Held())
    state._services.clear()
    settings = Settings(workspace=str(tmp_path))
    try:
        refs = [weakref.ref(state._services(settings.model_copy(update={"model_timeout": 10.0 + i}).model_dump_json(),
                                            f"typed-key-{i}", KeyRing.operator([])))
                for i in range(12)]
        gc.collect()
        alive = [i for i, ref in enumerate(refs) if ref() is not None]
        assert len(alive) <= MAX_CACHED_SERVICES
        assert alive == list(range(12 - len(alive), 12))  # the most recent ones are the ones kept
        again = state._services(settings.model_copy(update={"model_timeout": 21.0}).model_dump_json(), "typed-key-11",
                                KeyRing.operator([]))
        assert again is refs[11]()  # still a cache: the latest combination is not built again
    finally:
        state._services.clear()
