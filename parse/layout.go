package parse

import (
	"path"
	"sort"
	"strings"
)

// The host layout under a pipeline root, as slash paths relative to it.
// The worker writes these files and the dashboard reads them; each name is
// spelled here and nowhere else. The dashboard reaches them through Layout
// (slash paths, the remote host's view); the worker, which runs on the
// host, joins them to its root with filepath.FromSlash.
const (
	WorkerLogPath   = "logs/inference_all.log"    // the worker's stdout
	ServerLogPath   = "logs/sglang_inference.log" // the SGLang server's stdout/stderr
	ManifestPath    = "pipeline.toml"             // the optional manifest (Manifest)
	RunDir          = "run"                       // the worker's lock and state
	WorkerStatePath = RunDir + "/" + WorkerStateFile
	KillNotePath    = RunDir + "/synthwatch-kill" // left by the kill action
	WindowsPath     = RunDir + "/windows.json"    // the adaptive window's last good values, by server and class
	PreparedDir     = "prepared"                  // one folder per category
)

// WorkerStateFile is the worker's state file (WorkerState) in RunDir. Its
// name also tags figures that come from it.
const WorkerStateFile = "worker.json"

// WorkerLockFile is the lock note an older worker held in RunDir.
const WorkerLockFile = "worker.lock"

// The files in a category's folder, PreparedDir/NAME/.
const (
	PromptsFile = "prompts.jsonl"       // input: one prompt a line, each with an "id"
	RawFile     = "raw_responses.jsonl" // output: one completion a line, appended
	ErrorsFile  = "errors.jsonl"        // prompts that failed for good
	RunsFile    = "runs.jsonl"          // one RunLine per run that worked on it
)

// DefaultRoot is where the pipeline lives unless --root says otherwise.
const DefaultRoot = "/data/eagle3/synth_100k"

// DefaultServerAddr is where the SGLang server listens on the host unless
// told otherwise; DefaultServerURL is its URL as the worker and the
// dashboard (through the SSH link) reach it.
const (
	DefaultServerAddr = "127.0.0.1:30000"
	DefaultServerURL  = "http://" + DefaultServerAddr
)

// Layout is the host layout under one pipeline root, as slash paths (joined
// with package path). A Root holding glob characters that were escaped, and
// "*" for a name, give glob patterns.
type Layout struct{ Root string }

func (l Layout) at(rel ...string) string { return path.Join(append([]string{l.Root}, rel...)...) }

func (l Layout) WorkerLog() string  { return l.at(WorkerLogPath) }
func (l Layout) ServerLog() string  { return l.at(ServerLogPath) }
func (l Layout) Manifest() string   { return l.at(ManifestPath) }
func (l Layout) RunDir() string     { return l.at(RunDir) }
func (l Layout) WorkerJSON() string { return l.at(WorkerStatePath) }
func (l Layout) KillNote() string   { return l.at(KillNotePath) }
func (l Layout) Prepared() string   { return l.at(PreparedDir) }

// CategoryDir is the folder of category name.
func (l Layout) CategoryDir(name string) string { return l.at(PreparedDir, name) }

// Prompts, Raw, Errors and Runs are the files of category name.
func (l Layout) Prompts(name string) string { return l.at(PreparedDir, name, PromptsFile) }
func (l Layout) Raw(name string) string     { return l.at(PreparedDir, name, RawFile) }
func (l Layout) Errors(name string) string  { return l.at(PreparedDir, name, ErrorsFile) }
func (l Layout) Runs(name string) string    { return l.at(PreparedDir, name, RunsFile) }

// FindCategories lists the categories found under root's prepared/: each
// folder, or symlink to one, that holds prompts.jsonl or
// raw_responses.jsonl (whatever kind of file it is there), by name, once
// each, sorted. glob is the host's (remote.Host.Glob, or filepath.Glob on
// the host itself): the watcher, status and the digest find them alike.
func FindCategories(root string, glob func(pattern string) ([]string, error)) ([]string, error) {
	var found [][]string
	for _, pat := range CategoryGlobs(root) {
		m, err := glob(pat)
		if err != nil {
			return nil, err
		}
		found = append(found, m)
	}
	return CategoryNames(found...), nil
}

// CategoryGlobs are the patterns FindCategories globs: prompts.jsonl and
// raw_responses.jsonl in each folder of root's prepared/.
func CategoryGlobs(root string) []string {
	g := Layout{Root: GlobEscape(root)}
	return []string{g.Prompts("*"), g.Raw("*")}
}

// CategoryNames are the categories of the files CategoryGlobs' patterns
// matched (found: each pattern's matches), by name, once each, sorted.
func CategoryNames(found ...[]string) []string {
	seen := map[string]bool{}
	var names []string
	for _, m := range found {
		for _, p := range m {
			if n := path.Base(path.Dir(p)); !seen[n] {
				seen[n], names = true, append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names
}

// GlobEscape escapes s's glob characters, for a literal path in a pattern.
func GlobEscape(s string) string { return globEscaper.Replace(s) }

var globEscaper = strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`) // built once
