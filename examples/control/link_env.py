"""A Gymnasium-style environment over a running emu link: each `step` sets
the bottleneck's rate and returns what the link did over the step, the
telemetry a learning agent's reward needs. Standard library only: it has
Gymnasium's `reset`/`step` shape without importing it.

Run inside emu, with a TCP flow to drive the link:

    emu --control /tmp/emu-env.sock --outside 'iperf3 -s -p 5202' \\
        link 20mbit --queue "droptail packets 100" -- \\
        python3 examples/control/link_env.py /tmp/emu-env.sock --steps 8

The policy below is a plain closed loop (lower the rate while the queue's
99th-percentile sojourn is long, raise it while short), standing in for
an agent.
"""

import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from emu_control import EmuControl  # noqa: E402


class LinkEnv:
    """Observation: (delivered Mbit/s, queue packets, sojourn p99 ms) over
    the last step. Action: the element's rate in Mbit/s. Reward: the
    delivered Mbit/s less `delay_weight` per ms of sojourn p99."""

    def __init__(self, address, element="0.uplink", step="200ms", delay_weight=0.2):
        self.emu = EmuControl(address)
        self.element = element
        self.step_ns = int(float(step.removesuffix("ms")) * 1e6)
        self.delay_weight = delay_weight
        self.emu.watch(every=step, elements=[element])
        self.queue = self.emu.get(element)[element]["queue"]
        self.last = None

    def _observe(self):
        reading = self.emu.reading()
        now = reading["elements"][self.element]
        before, self.last = self.last, (reading["t_ns"], now)
        if before is None:
            return (0.0, now["queue_packets"], 0.0)
        seconds = (reading["t_ns"] - before[0]) / 1e9
        mbit = (now["delivered_bytes"] - before[1]["delivered_bytes"]) * 8 / seconds / 1e6
        p99 = (now.get("sojourn_p99_ns") or 0) / 1e6
        return (mbit, now["queue_packets"], p99)

    def reset(self, seed=None, rate_mbit=10.0):
        """A new episode: the starting rate, and the queue flushed (replaced
        by one of the same discipline), at one instant."""
        self.emu.set({f"{self.element}.rate": f"{rate_mbit}mbit",
                      f"{self.element}.queue_replace": self.queue})
        self.last = None
        self._observe()
        return self._observe(), {}

    def step(self, rate_mbit):
        at_ns = self.emu.set({f"{self.element}.rate": f"{max(rate_mbit, 0.1):.3f}mbit"})
        observation = self._observe()
        reward = observation[0] - self.delay_weight * observation[2]
        return observation, reward, False, False, {"at_ns": at_ns}

    def close(self):
        self.emu.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("socket")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--iperf3-port", default="5202")
    args = parser.parse_args()
    base = os.environ.get("EMU_BASE")
    if not base:
        sys.exit("link_env.py: run it inside emu (EMU_BASE is not set)")
    time.sleep(0.5)  # the --outside server's moment to listen
    flow = subprocess.Popen(["iperf3", "-c", base, "-p", args.iperf3_port, "-t", "60"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = LinkEnv(args.socket)
    try:
        observation, _ = env.reset()
        rate = 10.0
        for step in range(args.steps):
            mbit, queued, p99 = observation
            rate = rate * (0.8 if p99 > 20 else 1.15)
            observation, reward, _, _, info = env.step(rate)
            print(f"step {step}: rate {rate:6.2f} Mbit/s at {info['at_ns'] / 1e9:7.3f}s -> "
                  f"delivered {observation[0]:6.2f} Mbit/s, queue {observation[1]:4d} pkts, "
                  f"sojourn p99 {observation[2]:6.1f} ms, reward {reward:6.2f}", flush=True)
    finally:
        env.close()
        flow.terminate()
        flow.wait()


if __name__ == "__main__":
    main()
