"""tp.hub: entrypoints of a local hubconf.py, the github source from a filled cache (no
network), load_state_dict_from_url from file:// URLs and paths; errors as torch.hub's."""
import hashlib
import os
import textwrap

import numpy as np
import pytest
import torch

import tensorplay as tp

HUBCONF = '''
dependencies = ["numpy"]
import helper            # the repository's own module, importable while hubconf loads


def tiny_mlp(hidden=4, scale=1.0):
    """A two-layer MLP whose first weight is filled with ``scale``."""
    import tensorplay as tp
    m = tp.nn.Sequential(tp.nn.Linear(3, hidden), tp.nn.ReLU(), tp.nn.Linear(hidden, 2))
    with tp.no_grad():
        m[0].weight.fill_(scale)
    return m


def echo(*args, **kwargs):
    """Returns its arguments."""
    return helper.tag, args, kwargs


def _private():
    pass


not_callable = 3
'''


@pytest.fixture
def repo(tmp_path):
    d = tmp_path / "repo"
    d.mkdir()
    (d / "hubconf.py").write_text(textwrap.dedent(HUBCONF))
    (d / "helper.py").write_text("tag = 'helper'\n")
    return str(d)


def test_load_local(repo):
    m = tp.hub.load(repo, "tiny_mlp", source="local", hidden=5, scale=0.5)
    assert isinstance(m, tp.nn.Sequential) and m[0].weight.shape == (5, 3)
    assert (m[0].weight == 0.5).all()
    for lib in (tp, torch):
        assert lib.hub.load(repo, "echo", 1, 2, source="local", k=3) == \
            ("helper", (1, 2), {"k": 3})


def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("case", ["missing", "not_callable", "private_ok", "bad_source",
                                  "not_str", "missing_dep"])
def test_errors_as_torch_hub(repo, case):
    if case == "missing_dep":
        path = os.path.join(repo, "hubconf.py")
        with open(path, "a") as f:
            f.write("\ndependencies = ['numpy', 'no_such_module_xyz', 'nor_this_one']\n")

    def run(lib):
        if case == "missing":
            return lib.hub.load(repo, "no_such_model", source="local")
        if case == "not_callable":
            return lib.hub.load(repo, "not_callable", source="local")
        if case == "private_ok":
            return lib.hub.load(repo, "_private", source="local")
        if case == "bad_source":
            return lib.hub.load(repo, "echo", source="gitlab")
        if case == "not_str":
            return lib.hub.load(repo, 3, source="local")
        return lib.hub.load(repo, "echo", source="local")
    got, want = _err(lambda: run(tp)), _err(lambda: run(torch))
    assert got == want
    if case != "private_ok":
        assert got is not None


def test_github_source_from_cache_list_help_and_dirs(repo, tmp_path, monkeypatch):
    hub = tmp_path / "hub"
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "home"))
    old = tp.hub._hub_dir
    try:
        tp.hub._hub_dir = None
        assert tp.hub.get_dir() == os.path.join(str(tmp_path / "home"), "hub")
        tp.hub.set_dir(str(hub))
        assert tp.hub.get_dir() == str(hub)
        os.makedirs(hub)
        os.symlink(repo, hub / "someone_models_main")
        assert sorted(tp.hub.list("someone/models:main", trust_repo=True)) == ["echo", "tiny_mlp"]
        assert tp.hub.help("someone/models:main", "echo", trust_repo=True) == \
            "Returns its arguments."
        out = tp.hub.load("someone/models:main", "echo", 7, trust_repo=True, verbose=False)
        assert out == ("helper", (7,), {})
        # a cached someone_models_main counts as trusted (PyTorch's legacy rule): no prompt
        assert (hub / "trusted_list").exists()
    finally:
        tp.hub._hub_dir = old


def test_load_state_dict_from_url(tmp_path):
    sd = {"w": torch.arange(6.0).reshape(2, 3), "b": torch.ones(2)}
    src = tmp_path / "weights.pth"
    torch.save(sd, src)
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    named = tmp_path / f"weights-{digest[:8]}.pth"
    named.write_bytes(src.read_bytes())
    cache = tmp_path / "ckpt"
    got = tp.hub.load_state_dict_from_url(named.as_uri(), model_dir=str(cache), check_hash=True,
                                          progress=False)
    np.testing.assert_array_equal(np.asarray(got["w"].tolist()), sd["w"].numpy())
    assert os.listdir(cache) == [named.name]
    got2 = tp.hub.load_state_dict_from_url(str(src), model_dir=str(cache), file_name="x.pth")
    assert got2["b"].tolist() == [1.0, 1.0]
    bad = tmp_path / "weights-deadbeef.pth"
    bad.write_bytes(src.read_bytes())
    with pytest.raises(RuntimeError, match='invalid hash value \\(expected "deadbeef"'):
        tp.hub.load_state_dict_from_url(bad.as_uri(), model_dir=str(cache), check_hash=True)
    assert not [n for n in os.listdir(cache) if n.endswith(".partial")]
