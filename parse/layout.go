package parse

// The host layout under a pipeline root, as slash paths relative to it.
// The worker writes these files and the dashboard reads them.
const (
	WorkerLogPath = "logs/inference_all.log"    // the worker's stdout
	ServerLogPath = "logs/sglang_inference.log" // the SGLang server's stdout/stderr
)
