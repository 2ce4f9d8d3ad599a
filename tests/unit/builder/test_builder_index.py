"""Builder.index: a declared index is on every informer the controller reads the kind from
(read through lister_for's by_index, alongside the owned controller-uid index); declaring it
twice, under a built-in index's name, after the kind's readers were handed out, or in the
other form than the kind's declaration is a ValueError."""

from __future__ import annotations

import pytest

from pyctrl import CONFIGMAPS, CONTROLLER_UID_INDEX, Manager
from pyctrl.models.core_v1 import ConfigMap, Secret


def _data_keys(cm: ConfigMap) -> list[str]:
    return sorted(cm.data)


def test_a_declared_index_is_read_through_the_lister(manager: Manager) -> None:
    builder = manager.controller("c").for_(Secret).owns(ConfigMap).index(
        ConfigMap, "data-keys", _data_keys)
    lister = builder.lister_for(ConfigMap)
    indexer = builder.informers_for(ConfigMap)[0].get_indexer()
    assert set(indexer.get_indexers()) >= {"data-keys", CONTROLLER_UID_INDEX}
    assert lister.by_index("data-keys", "k") == []


def test_misdeclared_indexes_are_refused(manager: Manager) -> None:
    builder = manager.controller("c").for_(ConfigMap).index(ConfigMap, "keys", _data_keys)
    with pytest.raises(ValueError, match="already declared"):
        builder.index(ConfigMap, "keys", _data_keys)
    with pytest.raises(ValueError, match="already declared"):
        builder.index(ConfigMap, CONTROLLER_UID_INDEX, _data_keys)
    with pytest.raises(ValueError, match="one form"):
        builder.index(CONFIGMAPS, "raw", lambda o: [])
    builder.lister_for(Secret)
    with pytest.raises(ValueError, match="before lister_for"):
        builder.index(Secret, "late", lambda s: [])
