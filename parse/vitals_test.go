package parse

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func fp(v float64) *float64 { return &v }

func eqF(a, b *float64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

func TestParseGPUs(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []GPU
		err  bool
	}{
		{"h100 with uuid", "0, NVIDIA H100 80GB HBM3, 97, 63412, 81559, 71, 612.34, GPU-5b3a1c2e-8f0d-4e7a-9c11-0f2b7d6e4a10\n" +
			"1, NVIDIA H100 80GB HBM3, 0, 1, 81559, 32, 69.61, GPU-0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6\n",
			[]GPU{
				{Index: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-5b3a1c2e-8f0d-4e7a-9c11-0f2b7d6e4a10", UtilPct: fp(97), MemUsedMiB: fp(63412), MemTotalMiB: fp(81559), TempC: fp(71), PowerW: fp(612.34)},
				{Index: 1, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6", UtilPct: fp(0), MemUsedMiB: fp(1), MemTotalMiB: fp(81559), TempC: fp(32), PowerW: fp(69.61)},
			}, false},
		{"no uuid column, N/A and Not Supported, CRLF, extra spaces", "0,  Tesla T4 ,  [N/A], 0 ,15360, 41, [Not Supported]\r\n\r\n",
			[]GPU{{Index: 0, Name: "Tesla T4", UtilPct: nil, MemUsedMiB: fp(0), MemTotalMiB: fp(15360), TempC: fp(41), PowerW: nil}}, false},
		{"units left in", "3, NVIDIA A100-SXM4-80GB, 45 %, 40000 MiB, 81920 MiB, 60, 250.10 W, GPU-aaaa\n",
			[]GPU{{Index: 3, Name: "NVIDIA A100-SXM4-80GB", UUID: "GPU-aaaa", UtilPct: fp(45), MemUsedMiB: fp(40000), MemTotalMiB: fp(81920), TempC: fp(60), PowerW: fp(250.1)}}, false},
		{"a name with a comma", "0, Weird, GPU, 5, 10, 20, 30, 40.5, GPU-bbbb\n",
			[]GPU{{Index: 0, Name: "Weird, GPU", UUID: "GPU-bbbb", UtilPct: fp(5), MemUsedMiB: fp(10), MemTotalMiB: fp(20), TempC: fp(30), PowerW: fp(40.5)}}, false},
		{"an error line among the rows", "0, NVIDIA H100 80GB HBM3, 97, 63412, 81559, 71, 612.34, GPU-cccc\nUnable to determine the device handle for GPU0000:1B:00.0: Unknown Error\n",
			[]GPU{{Index: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-cccc", UtilPct: fp(97), MemUsedMiB: fp(63412), MemTotalMiB: fp(81559), TempC: fp(71), PowerW: fp(612.34)}}, true},
		{"the driver is gone", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n", nil, true},
		{"empty", "", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseGPUs(c.in)
			if (err != nil) != c.err {
				t.Fatalf("err %v, want error %v", err, c.err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d GPUs %+v, want %d", len(got), got, len(c.want))
			}
			for i, g := range got {
				w := c.want[i]
				if g.Index != w.Index || g.Name != w.Name || g.UUID != w.UUID || !eqF(g.UtilPct, w.UtilPct) || !eqF(g.MemUsedMiB, w.MemUsedMiB) ||
					!eqF(g.MemTotalMiB, w.MemTotalMiB) || !eqF(g.TempC, w.TempC) || !eqF(g.PowerW, w.PowerW) {
					t.Errorf("GPU %d: got %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func TestParseGPUApps(t *testing.T) {
	in := "GPU-5b3a1c2e-8f0d-4e7a-9c11-0f2b7d6e4a10, 48211, 62310\r\nGPU-0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6, 48212, [N/A]\nNo running processes found\n"
	got := ParseGPUApps(in)
	if len(got) != 2 || got[0].PID != 48211 || got[0].UsedMemMiB == nil || *got[0].UsedMemMiB != 62310 ||
		got[1].GPUUUID != "GPU-0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6" || got[1].UsedMemMiB != nil {
		t.Fatalf("%+v", got)
	}
	if got := ParseGPUApps(""); len(got) != 0 {
		t.Fatalf("empty: %+v", got)
	}
}

func TestParseLoadAvgMemInfo(t *testing.T) {
	for in, want := range map[string]float64{"12.31 11.90 10.02 14/2043 99812\n": 12.31, "0.00 0.01 0.05 1/100 5\r\n": 0} {
		if got, err := ParseLoadAvg(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	if _, err := ParseLoadAvg(" \n"); err == nil {
		t.Error("empty loadavg read")
	}
	mem := "MemTotal:       2113532052 kB\r\nMemFree:         9023444 kB\nMemAvailable:   1520398112 kB\n"
	a, tot, err := ParseMemInfo(mem)
	if err != nil || a != 1520398112*1024 || tot != 2113532052*1024 {
		t.Fatalf("meminfo: %d %d %v", a, tot, err)
	}
	if _, _, err := ParseMemInfo("MemTotal: 10 kB\n"); err == nil {
		t.Error("meminfo without MemAvailable read")
	}
}

func TestParseDF(t *testing.T) {
	cases := []struct {
		in          string
		free, total int64
		err         bool
	}{
		{"Filesystem        1-blocks          Used     Available Capacity Mounted on\n/dev/nvme0n1p2 7620982788096 6287302443008 1333680345088      83% /data\n", 1333680345088, 7620982788096, false},
		{"Filesystem 1-blocks Used Available Capacity Mounted on\r\nmy fs:/export 1000 900 100 90% /mnt/with space\r\n", 100, 1000, false},
		{"Filesystem 1024-blocks Used Available Capacity Mounted on\noverlay 100 0 100 0% /\n", 102400, 102400, false},
		{"df: /data/eagle3: No such file or directory\n", 0, 0, true},
	}
	for _, c := range cases {
		free, total, err := ParseDF(c.in)
		if (err != nil) != c.err || free != c.free || total != c.total {
			t.Errorf("%q: %d %d %v", c.in, free, total, err)
		}
	}
}

func TestParseProc(t *testing.T) {
	stat := "48211 (synthwatch (w) x) S 1 48211 48211 0 -1 4194560 52113 0 0 0 91234 5120 0 0 20 0 42 0 8812345 9876543210 352000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n"
	ps, err := ParseProcStat(stat)
	if err != nil || ps.Ticks != 91234+5120 || ps.StartTime != 8812345 {
		t.Fatalf("%+v %v", ps, err)
	}
	if _, err := ParseProcStat("48211 (x) S 1 2\n"); err == nil {
		t.Error("short stat read")
	}
	if rss, ok := ParseVmRSS("VmRSS:\t 1468006 kB\r\n"); !ok || rss != 1468006*1024 {
		t.Errorf("rss %d %v", rss, ok)
	}
	if up, ok := ParseUptime("350735.47 234388.90\n"); !ok || up != 350735.47 {
		t.Errorf("uptime %v %v", up, ok)
	}
}

func TestSplitVitals(t *testing.T) {
	out := strings.Join([]string{
		VitalsMark + "gpu 0", "0, NVIDIA H100 80GB HBM3, 97, 1, 2, 3, 4", "1, NVIDIA H100 80GB HBM3, 0, 1, 2, 3, 4",
		VitalsMark + "apps 0", "",
		VitalsMark + "load 0", "1.00 2.00 3.00 1/2 3",
		VitalsMark + "df 1", "df: /x: No such file or directory",
		VitalsMark + "odd", "",
	}, "\n")
	s := SplitVitals(out)
	if g := s["gpu"]; g.Code != 0 || strings.Count(g.Out, "\n") != 2 {
		t.Errorf("gpu %+v", g)
	}
	if d := s["df"]; d.Code != 1 || !strings.Contains(d.Out, "No such") {
		t.Errorf("df %+v", d)
	}
	if o := s["odd"]; o.Code != -1 {
		t.Errorf("odd %+v", o)
	}
	if _, ok := s["mem"]; ok {
		t.Error("mem was not printed")
	}
}

// FuzzVitals: whatever a host prints, the parsers give figures that JSON
// can carry (no NaN, no infinity), names without control characters, and
// a GPU row written the way nvidia-smi writes it reads back the same.
func FuzzVitals(f *testing.F) {
	f.Add("0, NVIDIA H100 80GB HBM3, 97, 63412, 81559, 71, 612.34, GPU-5b3a\n", 3, 97.5)
	f.Add("1, x, [N/A], Inf, NaN, -0, 1e400\r\n", 0, 0.0)
	f.Add("df: x\nFilesystem 1-blocks Used Available Capacity Mounted on\na 1 2 3 4% /\n", 7, 12.31)
	f.Fuzz(func(t *testing.T, out string, idx int, util float64) {
		gpus, _ := ParseGPUs(out)
		apps := ParseGPUApps(out)
		l, lerr := ParseLoadAvg(out)
		up, _ := ParseUptime(out)
		ParseDF(out)
		ParseMemInfo(out)
		ParseProcStat(out)
		SplitVitals(out)
		if lerr == nil && !finite(l) {
			t.Fatalf("load %v", l)
		}
		if _, err := json.Marshal([]any{gpus, apps, l, up}); err != nil {
			t.Fatalf("json: %v", err)
		}
		for _, g := range gpus {
			if g.Name != SanitizeString(g.Name) || strings.ContainsAny(g.Name, "\n\r") {
				t.Fatalf("name %q", g.Name)
			}
		}
		if idx < 0 || !finite(util) || util < 0 {
			return
		}
		row := fmt.Sprintf("%d, NVIDIA H100 80GB HBM3, %s, 1, 2, 3, [N/A], GPU-%d\n", idx, strconv.FormatFloat(util, 'f', -1, 64), idx)
		back, err := ParseGPUs(row)
		if err != nil || len(back) != 1 || back[0].Index != idx || back[0].UtilPct == nil || *back[0].UtilPct != util || back[0].PowerW != nil {
			t.Fatalf("%q read back as %+v, %v", row, back, err)
		}
	})
}
