package snapshot

// Vitals is the host's health: status --json's "vitals" (schema 1).
// Every figure is null when it was not read: no nvidia-smi, no worker, or
// the link down (a stale snapshot shows no vitals at all).
type Vitals struct {
	GPUs     []GPU  `json:"gpus"`                // null: no nvidia-smi on the host (or not read)
	GPUError string `json:"gpu_error,omitempty"` // nvidia-smi is there but failed
	GPUsLost []int  `json:"gpus_lost,omitempty"` // indices seen in this session and missing now
	// GPUsIdle: every GPU at 0 % for pipeline's gpuIdleAfter while the worker runs
	GPUsIdle       bool     `json:"gpus_idle,omitempty"`
	Disk           *Disk    `json:"disk"`
	Load1          *float64 `json:"load1"`
	MemAvailBytes  *int64   `json:"mem_avail_bytes"`
	MemTotalBytes  *int64   `json:"mem_total_bytes"`
	WorkerRSSBytes *int64   `json:"worker_rss_bytes"`
	WorkerCPUPct   *float64 `json:"worker_cpu_pct"` // of one core: 180 is nearly two
}

// GPU is one GPU as nvidia-smi reports it; a figure the driver does not
// give ([N/A]) is null.
type GPU struct {
	Index       int      `json:"index"`
	Name        string   `json:"name"`
	UtilPct     *float64 `json:"util_pct"`
	MemUsedMiB  *float64 `json:"mem_used_mib"`
	MemTotalMiB *float64 `json:"mem_total_mib"`
	TempC       *float64 `json:"temp_c"`
	PowerW      *float64 `json:"power_w"`
	PIDs        []int    `json:"pids,omitempty"` // compute processes on it
}

// Disk is the root's filesystem.
type Disk struct {
	FreeBytes  int64    `json:"free_bytes"`
	TotalBytes int64    `json:"total_bytes"`
	FullInS    *float64 `json:"full_in_s"` // at the current write rate; null when free space is not shrinking
	Low        bool     `json:"low,omitempty"`
}
