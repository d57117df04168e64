"""`gpukit calibrate [--quick] [--out FILE] [--device cpu|cuda]`: measure this machine, write its profile."""

from __future__ import annotations

import sys

from gpukit.cli import add_json_flag
from gpukit.cli.argtypes import bounded_int, timeout


def _run(args):
    from gpukit.bench.calibrate import calibrate

    try:
        profile = calibrate(
            quick=args.quick, device=args.device, out=args.out, threads=args.threads, timeout_s=args.timeout
        )
    except TimeoutError as e:
        raise ValueError(str(e)) from None
    except OSError as e:  # the profile file could not be written
        raise ValueError(
            f"--out {args.out or 'profile'}: cannot write ({e.strerror or type(e).__name__}: {e.filename})"
        ) from None
    except RuntimeError as e:  # a run that failed (not bad input): one line, exit 1, as `gpukit bench`
        print(
            f"error: {str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}",
            file=sys.stderr,
        )
        raise SystemExit(1) from None
    if profile.get("replaced"):  # said on stderr too, so --json output stays one JSON document
        print(
            f"note: replaced the existing profile {profile['path']}; the previous one is kept at "
            f"{profile['replaced']}",
            file=sys.stderr,
        )
    if args.json:  # the same keys every run (issue 25): null where no link failed, no profile was replaced
        return profile | {"links_failed": profile.get("links_failed"), "replaced": profile.get("replaced")}
    link = profile["links"].get("loopback-gloo", {})
    lines = [
        f"device            {profile['device']['label']} {profile['device']['name']} "
        f"({profile['device']['threads']} threads)"
    ]
    lines += [f"matmul {k:<10} {v:10.3f} TFLOPS" for k, v in profile["matmul_tflops"].items()]
    lines += [f"memory {k:<10} {v:10.2f} GB/s" for k, v in profile["memory_bandwidth_gbps"].items()]
    for name, fit in profile["links"].items():
        lines.append(
            f"link {name:<12} alpha {fit['alpha_us']:.1f} us, beta {fit['beta_gbps']:.3f} GB/s, "
            f"holdout error {fit['holdout_error']:.0%}"
        )
    for name, why in profile.get("links_failed", {}).items():
        lines.append(f"link {name:<12} failed, not in the profile: {why}")
    if not link:
        lines.append("link loopback-gloo not measured")
    lines.append(f"wrote {profile['path']} in {profile['elapsed_s']:.1f} s")
    if profile.get("replaced"):
        lines.append(f"replaced the previous profile there; it is kept at {profile['replaced']}")
    return "\n".join(lines)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "calibrate",
        help="measure matmul, memory bandwidth and a loopback link; write the hardware profile JSON",
    )
    p.add_argument("--quick", action="store_true", help="small sizes (~1 minute on 2 cores)")
    p.add_argument("--out", help="profile file (default: $GPUKIT_PROFILE or ~/.cache/gpukit/profile.json)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    p.add_argument("--threads", type=bounded_int, help="torch threads for matmul/memory (default: torch's)")
    p.add_argument("--timeout", type=timeout, default=900, help="seconds before giving up")
    add_json_flag(p)
    p.set_defaults(func=_run)
