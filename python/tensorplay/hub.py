"""tensorplay.hub: PyTorch's ``torch.hub``. Models are published as a ``hubconf.py`` whose
public callables are the entrypoints::

    # hubconf.py
    dependencies = ["tensorplay"]

    def tiny_mlp(hidden=8, pretrained=False):
        '''A two-layer MLP.'''
        ...

    model = tp.hub.load("path/to/repo", "tiny_mlp", source="local", hidden=16)

``source="github"`` takes ``owner/name[:ref]``: the repository is downloaded into the hub
directory (``get_dir()``: ``$TORCH_HOME/hub``, default ``~/.cache/torch/hub``, shared with
PyTorch) once, and reused from there. ``load_state_dict_from_url`` fetches a checkpoint
(http(s), ``file://`` or a local path) into ``<hub dir>/checkpoints`` and ``tp.load``s it.
"""
import contextlib
import importlib.util
import os
import re
import sys
import warnings
from pathlib import Path
from urllib.parse import urlparse

# urllib.request, zipfile, shutil, tempfile, uuid and hashlib are imported where used: they
# add ~10 ms to `import tensorplay` otherwise.

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load",
           "load_state_dict_from_url", "set_dir"]

ENV_GITHUB_TOKEN = "GITHUB_TOKEN"
ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
VAR_DEPENDENCY = "dependencies"
MODULE_HUBCONF = "hubconf.py"
READ_DATA_CHUNK = 128 * 1024
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
_TRUSTED_REPO_OWNERS = ("facebookresearch", "facebookincubator", "pytorch", "fairinternal")

_hub_dir = None


@contextlib.contextmanager
def _add_to_sys_path(path):
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _import_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise AssertionError(f"failed to load spec from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _remove_if_exists(path):
    import shutil
    if os.path.exists(path):
        if os.path.isfile(path):
            os.remove(path)
        else:
            shutil.rmtree(path)


def _load_attr_from_module(module, func_name):
    return getattr(module, func_name, None)


def _get_torch_home():
    return os.path.expanduser(os.getenv(ENV_TORCH_HOME, os.path.join(
        os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR), "torch")))


def get_dir():
    """The hub directory: downloaded repositories and ``checkpoints/`` (``set_dir``'s, else
    ``$TORCH_HOME/hub``, ``$TORCH_HOME`` defaulting to ``$XDG_CACHE_HOME/torch``)."""
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d):
    """Sets the hub directory."""
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


def _check_module_exists(name):
    return importlib.util.find_spec(name) is not None


def _check_dependencies(m):
    deps = _load_attr_from_module(m, VAR_DEPENDENCY)
    if deps is not None:
        missing = [pkg for pkg in deps if not _check_module_exists(pkg)]
        if missing:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")


def _load_entry_from_hubconf(m, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    _check_dependencies(m)
    func = _load_attr_from_module(m, model)
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def _hubconf(repo_dir):
    with _add_to_sys_path(repo_dir):
        return _import_module(MODULE_HUBCONF, os.path.join(repo_dir, MODULE_HUBCONF))


# ------------------------------------------------------------------------------ github

def _git_archive_link(owner, name, ref):
    return f"https://github.com/{owner}/{name}/zipball/{ref}"


def _parse_repo_info(github):
    from urllib.error import HTTPError, URLError
    from urllib.request import urlopen
    if ":" in github:
        repo_info, ref = github.split(":")
    else:
        repo_info, ref = github, None
    owner, name = repo_info.split("/")
    if ref is None:
        # main if it exists, else master; offline, whichever the cache holds
        try:
            with urlopen(f"https://github.com/{owner}/{name}/tree/main/"):
                ref = "main"
        except HTTPError as e:
            if e.code != 404:
                raise
            ref = "master"
        except URLError as e:
            for possible in ("main", "master"):
                if os.path.exists(f"{get_dir()}/{owner}_{name}_{possible}"):
                    ref = possible
                    break
            if ref is None:
                raise RuntimeError("It looks like there is no internet connection and the "
                                   f"repo could not be found in the cache ({get_dir()})") from e
    return owner, name, ref


def _check_repo_is_trusted(owner, name, owner_name_branch, trust_repo):
    hub_dir = get_dir()
    path = os.path.join(hub_dir, "trusted_list")
    if not os.path.exists(path):
        Path(path).touch()
    with open(path) as f:
        trusted = tuple(line.strip() for line in f)
    legacy = next(os.walk(hub_dir))[1]
    owner_name = f"{owner}_{name}"
    is_trusted = (owner_name in trusted or owner_name_branch in legacy
                  or owner in _TRUSTED_REPO_OWNERS)
    if trust_repo is False or (trust_repo == "check" and not is_trusted):
        response = input(
            f"The repository {owner_name} does not belong to the list of trusted repositories "
            "and as such cannot be downloaded. Do you trust this repository and wish to add it "
            "to the trusted list of repositories (y/N)?")
        if response.lower() in ("y", "yes"):
            if is_trusted:
                print("The repository is already trusted.")
        elif response.lower() in ("n", "no", ""):
            raise Exception("Untrusted repository.")  # noqa: TRY002  (PyTorch's type)
        else:
            raise ValueError(f"Unrecognized response {response}.")
    if not is_trusted:
        with open(path, "a") as f:
            f.write(owner_name + "\n")


def _safe_extract_zip(zf, dest):
    root = os.path.realpath(dest)
    for member in zf.infolist():
        name = member.filename
        if os.path.isabs(name) or name.startswith(("/", "\\")):
            raise ValueError(f"Archive entry has absolute path: {name}")
        target = os.path.realpath(os.path.join(root, name))
        if os.path.commonpath([root, target]) != root:
            raise ValueError(f"Archive entry escapes the extraction directory: {name}")
    zf.extractall(dest)


def _get_cache_or_reload(github, force_reload, trust_repo, verbose=True,
                         skip_validation=False):
    import shutil
    import zipfile
    hub_dir = get_dir()
    os.makedirs(hub_dir, exist_ok=True)
    owner, name, ref = _parse_repo_info(github)
    branch = ref.replace("/", "_")
    owner_name_branch = "_".join([owner, name, branch])
    repo_dir = os.path.join(hub_dir, owner_name_branch)
    _check_repo_is_trusted(owner, name, owner_name_branch, trust_repo=trust_repo)
    if not force_reload and os.path.exists(repo_dir):
        if verbose:
            sys.stderr.write(f"Using cache found in {repo_dir}\n")
        return repo_dir
    cached_file = os.path.join(hub_dir, branch + ".zip")
    _remove_if_exists(cached_file)
    url = _git_archive_link(owner, name, ref)
    sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
    download_url_to_file(url, cached_file, progress=False)
    with zipfile.ZipFile(cached_file) as zf:
        extracted = os.path.join(hub_dir, zf.infolist()[0].filename)
        _remove_if_exists(extracted)
        _safe_extract_zip(zf, hub_dir)
    _remove_if_exists(cached_file)
    _remove_if_exists(repo_dir)
    shutil.move(extracted, repo_dir)
    return repo_dir


# ---------------------------------------------------------------------------- the API

def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True):
    """The entrypoints of a hub repository (``owner/name[:ref]``): the public callables of
    its hubconf.py."""
    repo_dir = _get_cache_or_reload(github, force_reload, trust_repo, verbose=verbose,
                                    skip_validation=skip_validation)
    module = _hubconf(repo_dir)
    return [f for f in dir(module) if callable(getattr(module, f)) and not f.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check"):
    """The docstring of entrypoint ``model``."""
    repo_dir = _get_cache_or_reload(github, force_reload, trust_repo, verbose=True,
                                    skip_validation=skip_validation)
    return _load_entry_from_hubconf(_hubconf(repo_dir), model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo=None, force_reload=False,
         verbose=True, skip_validation=False, **kwargs):
    """Calls entrypoint ``model`` of a hubconf.py with ``*args, **kwargs`` and returns what
    it returns. ``source="local"``: ``repo_or_dir`` is a directory holding the hubconf.py;
    ``"github"`` (default): ``owner/name[:ref]``, downloaded once into ``get_dir()``."""
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        repo_or_dir = _get_cache_or_reload(repo_or_dir, force_reload, trust_repo,
                                           verbose=verbose, skip_validation=skip_validation)
    return _load_local(repo_or_dir, model, *args, **kwargs)


def _load_local(hubconf_dir, model, *args, **kwargs):
    with _add_to_sys_path(hubconf_dir):
        module = _import_module(MODULE_HUBCONF, os.path.join(hubconf_dir, MODULE_HUBCONF))
        entry = _load_entry_from_hubconf(module, model)
        return entry(*args, **kwargs)


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Downloads ``url`` (http(s), ``file://``, or a local path) to ``dst``; with
    ``hash_prefix``, the file's SHA-256 must start with it."""
    import errno
    import hashlib
    import shutil
    import tempfile
    import uuid
    from urllib.request import Request, urlopen
    dst = os.path.expanduser(dst)
    for _ in range(tempfile.TMP_MAX):
        tmp = dst + "." + uuid.uuid4().hex + ".partial"
        try:
            f = open(tmp, "w+b")  # noqa: SIM115
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(errno.EEXIST, "No usable temporary file name found")
    try:
        if urlparse(url).scheme in ("", "file") or re.match(r"^[A-Za-z]:[\\/]", url):
            src = urlparse(url).path if url.startswith("file:") else url
            source = open(os.path.expanduser(src), "rb")  # noqa: SIM115
            size = os.path.getsize(os.path.expanduser(src))
        else:
            source = urlopen(Request(url, headers={"User-Agent": "tensorplay.hub"}))
            size = source.info().get("Content-Length")
        sha256 = hashlib.sha256() if hash_prefix is not None else None
        done = 0
        with source:
            while True:
                buf = source.read(READ_DATA_CHUNK)
                if not buf:
                    break
                f.write(buf)
                done += len(buf)
                if sha256 is not None:
                    sha256.update(buf)
                if progress and size:
                    sys.stderr.write(f"\r{100 * done // int(size)}%")
        if progress and size:
            sys.stderr.write("\n")
        f.close()
        if sha256 is not None:
            digest = sha256.hexdigest()
            if digest[:len(hash_prefix)] != hash_prefix:
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
        shutil.move(f.name, dst)
    finally:
        f.close()
        if os.path.exists(f.name):
            os.remove(f.name)


def _is_legacy_zip_format(filename):
    import zipfile
    if zipfile.is_zipfile(filename):
        with zipfile.ZipFile(filename) as zf:
            infos = zf.infolist()
        return len(infos) == 1 and not infos[0].is_dir()
    return False


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True,
                             check_hash=False, file_name=None, weights_only=False):
    """The object saved at ``url``, fetched once into ``model_dir`` (default
    ``<hub dir>/checkpoints``) and loaded with ``tp.load``. ``check_hash``: the file name's
    ``name-<sha256 prefix>.ext`` must match its content."""
    import zipfile
    from tensorplay.serialization import load as tp_load
    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead",
                      stacklevel=2)
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        sys.stdout.write(f'Downloading: "{url}" to {cached}\n')
        hash_prefix = None
        if check_hash:
            r = HASH_REGEX.search(filename)
            hash_prefix = r.group(1) if r else None
        download_url_to_file(url, cached, hash_prefix, progress=progress)
    if _is_legacy_zip_format(cached):
        warnings.warn("Falling back to the old format < 1.6. This support will be deprecated in "
                      "favor of default zipfile format introduced in 1.6. Please redo "
                      "torch.save() to save it in the new zipfile format.", FutureWarning,
                      stacklevel=2)
        with zipfile.ZipFile(cached) as zf:
            members = zf.infolist()
            if len(members) != 1:
                raise RuntimeError("Only one file(not dir) is allowed in the zipfile")
            _safe_extract_zip(zf, model_dir)
            cached = os.path.join(model_dir, members[0].filename)
    return tp_load(cached, map_location=map_location, weights_only=weights_only)

