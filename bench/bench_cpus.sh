# bench/bench_cpus.sh — sourced by the capture benches (capture_overhead.sh,
# capture_idle.sh): sets the array `pin` to the taskset prefix that keeps
# every process on the CPUs next to GPU 0 (a launch from the far socket is
# slower, and which socket a process lands on varies between runs), and
# `cpus` to that list. KVS_BENCH_CPUS overrides the list; KVS_BENCH_CPUS=none
# turns pinning off; KVS_BENCH_CPUS=probe leaves the choice to the bench
# (capture_overhead.sh: one CPU of the list, the fastest for a PyTorch
# launch loop), with the list here to choose from.
# defines: cpus, pin
cpus=${KVS_BENCH_CPUS:-}
[ "$cpus" = probe ] && cpus=
if [ -z "$cpus" ] && command -v nvidia-smi >/dev/null; then
    bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader -i 0 2>/dev/null | head -1 |
          tr 'A-F' 'a-f' | sed 's/^0000\(....:\)/\1/')
    [ -n "$bus" ] && [ -r "/sys/bus/pci/devices/$bus/local_cpulist" ] &&
        cpus=$(cat "/sys/bus/pci/devices/$bus/local_cpulist")
fi
pin=()
if [ -n "$cpus" ] && [ "$cpus" != none ] && command -v taskset >/dev/null; then
    pin=(taskset -c "$cpus")
fi
