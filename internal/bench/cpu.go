package bench

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// CPU is what the machine's processors did during a burst: whether the run
// was CPU-bound, which decides what its per-instance figures can show
// (docs/performance.md#instances-partitions-and-a-three-node-cluster).
type CPU struct {
	Cores int `json:"cores"` // runtime.NumCPU: the machine's, shared by everything on it
	// UserSeconds and SystemSeconds are this process's CPU time over the
	// burst: every instance, the in-process NATS servers and the bench's
	// own publishing. PostgreSQL is another process and is not in them.
	UserSeconds   float64 `json:"userSeconds"`
	SystemSeconds float64 `json:"systemSeconds"`
	// ProcessCores is (user + system) ÷ the burst's seconds: how many cores
	// this process kept busy on average.
	ProcessCores float64 `json:"processCores"`
	// MachineBusy is the share of all cores' time that was not idle over the
	// burst, whatever ran (PostgreSQL included, and anything else on the
	// machine): near 1, the run was CPU-bound.
	MachineBusy float64 `json:"machineBusy"`
}

// cpuMark is one reading of the process's and the machine's CPU counters;
// on systems without /proc it reads zeros, and CPU reports zeros.
type cpuMark struct {
	at               time.Time
	user, system     float64 // seconds of this process
	busy, total      uint64  // clock ticks of the machine, all cores
	procOK, systemOK bool
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every Linux
// architecture Go runs on.
const clockTicks = 100

func readCPU() cpuMark {
	m := cpuMark{at: time.Now()}
	m.user, m.system, m.procOK = processCPU()
	m.busy, m.total, m.systemOK = machineCPU()
	return m
}

// cpuSince is the CPU used from mark to now.
func cpuSince(mark cpuMark) CPU {
	now := readCPU()
	c := CPU{Cores: runtime.NumCPU()}
	secs := now.at.Sub(mark.at).Seconds()
	if mark.procOK && now.procOK {
		c.UserSeconds, c.SystemSeconds = round(now.user-mark.user), round(now.system-mark.system)
		c.ProcessCores = round((now.user - mark.user + now.system - mark.system) / secs)
	}
	if mark.systemOK && now.systemOK && now.total > mark.total {
		c.MachineBusy = round(float64(now.busy-mark.busy) / float64(now.total-mark.total))
	}
	return c
}

// processCPU reads utime and stime from /proc/self/stat, in seconds.
func processCPU() (user, system float64, ok bool) {
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name, in parentheses, may hold spaces: fields count from
	// after its closing one, where field 3 (state) is the first.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, 0, false
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64) // field 14, utime
	st, err2 := strconv.ParseUint(f[12], 10, 64) // field 15, stime
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return float64(ut) / clockTicks, float64(st) / clockTicks, true
}

// machineCPU reads the first line of /proc/stat: the ticks all cores spent
// busy (anything but idle and iowait) and in all.
func machineCPU() (busy, total uint64, ok bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, false
	}
	// user nice system idle iowait irq softirq steal (guest is in user).
	for i, v := range f[1:9] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += n
		if i != 3 && i != 4 {
			busy += n
		}
	}
	return busy, total, true
}
