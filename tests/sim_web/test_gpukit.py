"""The GPU kit's transfer plan: each transfer plus the working tree stays under the device tool's 64 MiB, in order,
each with its prepared script; the dry run prints the sequence. Cheap: no kit is built here (that downloads wheels)."""

import argparse
import subprocess
from pathlib import Path

import pytest

from sim_web.bundle.gpukit import CARRY_LIMIT, KIT, ROOT, RUNS, TREE_ROOM, check_plan, describe, plan, tree_bytes
from sim_web.bundle.wheels import BundleError

MIB = 2**20


def _kit(root: Path, sizes: dict[str, int]) -> Path:
    for name, size in sizes.items():
        (root / name).mkdir(parents=True)
        with (root / name / "part.bin").open("wb") as f:
            f.truncate(size)  # sparse: the size is what the plan reads
    return root


def test_the_plan_lists_transfers_in_order_and_flags_one_over_the_carry_cap(tmp_path):
    kit = _kit(tmp_path / KIT, {"t2": 40 * MIB, "t1": 50 * MIB, "t3": 62 * MIB})
    transfers = plan(kit)
    assert [(t.name, t.folder, t.script, t.bytes) for t in transfers] == [
        ("t1", ".gpukit/t1", "deploy/gpu-kit/t1.sh", 50 * MIB),
        ("t2", ".gpukit/t2", "deploy/gpu-kit/t2.sh", 40 * MIB),
        ("t3", ".gpukit/t3", "deploy/gpu-kit/t3.sh", 62 * MIB),
    ]
    problems = check_plan(transfers, 3 * MIB)
    assert len(problems) == 1 and problems[0].startswith("t3: 62.0 MiB + working tree 3.0 MiB")
    text = describe(transfers, 3 * MIB)
    assert "3 transfers" in text and "run(command='bash deploy/gpu-kit/t1.sh', carry=['.gpukit/t1'])" in text
    assert text.index("1. run") < text.index("2. run") < text.index("3. run")


def test_no_kit_is_an_error_naming_the_command(tmp_path):
    with pytest.raises(BundleError, match="sim-web gpu-kit"):
        plan(tmp_path)


def test_the_working_tree_leaves_room_for_a_transfer():
    assert tree_bytes() < TREE_ROOM  # every call carries it; a kit folder may use the rest of the 64 MiB


def test_every_transfer_has_a_prepared_script_that_parses():
    for name in RUNS:
        script = ROOT / "deploy" / "gpu-kit" / f"{name}.sh"
        text = script.read_text()
        assert ". deploy/gpu-kit/common.sh" in text and f"STAGE={name}" in text
        assert text.index("note start") < text.index("bench "), name  # numbers go to $OUT before the long part
        subprocess.run(["bash", "-n", str(script)], check=True)
    subprocess.run(["bash", "-n", str(ROOT / "deploy" / "gpu-kit" / "common.sh")], check=True)


def test_the_dry_run_prints_the_sequence(tmp_path, capsys):
    from sim_web.bundle.cli import run_gpukit

    kit = _kit(tmp_path / KIT, {"t1": 45 * MIB, "t2": 47 * MIB})
    assert run_gpukit(argparse.Namespace(index=None, out=str(kit), dry_run=True)) == 0
    out = capsys.readouterr().out
    assert "GPU kit: 2 transfers" in out and "45.0 MiB + tree" in out and "kit total 92.0 MiB" in out


@pytest.mark.skipif(not (ROOT / KIT).is_dir(), reason="no kit built here (`make gpu-kit` builds one)")
def test_the_built_kit_fits_the_device_tool():
    transfers = plan(ROOT / KIT)
    assert [t.name for t in transfers] == list(RUNS)
    assert not check_plan(transfers, tree_bytes())
    assert all(t.bytes + TREE_ROOM < CARRY_LIMIT for t in transfers)
    assert all((ROOT / t.folder / "SHA256SUMS").is_file() for t in transfers)


def _verify(root: Path) -> tuple[int, str]:
    """Run common.sh's ``verify t1`` in ``root`` (holding ``.gpukit/t1``); its status and the notes it wrote."""
    common = ROOT / "deploy" / "gpu-kit" / "common.sh"
    done = subprocess.run(
        ["bash", "-c", f'STAGE=t1; . "{common}"; verify t1'], cwd=root, env={"PATH": "/usr/bin:/bin", "OUT": "out"}
    )
    notes = root / "out" / "t1.json"
    return done.returncode, notes.read_text() if notes.is_file() else ""


def test_the_verifier_refuses_files_its_checksum_list_does_not_name(tmp_path):
    """Issue 59, item 11: a file planted in a transfer (a wheel that ``wheels/*.whl`` would install) is refused."""
    t1 = tmp_path / KIT / "t1"
    (t1 / "wheels").mkdir(parents=True)
    (t1 / "wheels" / "good-1.0-py3-none-any.whl").write_bytes(b"good")
    (t1 / "index.tar.gz").write_bytes(b"index")
    sums = subprocess.run(
        ["sha256sum", "wheels/good-1.0-py3-none-any.whl", "index.tar.gz"], cwd=t1, capture_output=True, check=True
    )
    (t1 / "SHA256SUMS").write_bytes(sums.stdout)
    assert _verify(tmp_path) == (0, "")  # the control: exactly the listed files
    (t1 / "wheels" / "evil-1.0-py3-none-any.whl").write_bytes(b"evil")
    rc, notes = _verify(tmp_path)
    assert rc == 1 and "1 files not in SHA256SUMS" in notes
    (t1 / "wheels" / "evil-1.0-py3-none-any.whl").unlink()
    (t1 / "wheels" / "link.whl").symlink_to("/etc/hostname")  # a link is a file too
    assert _verify(tmp_path)[0] == 1
