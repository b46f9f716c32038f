package digest

import (
	"bufio"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// A digest keeps the stamps it read of each category's records in the
// user's cache on the host (Options.Keep), so a report on a root it read
// before reads only the records written since: the rest are replayed to
// the fold from the kept stamps, a few bytes each, in the file's order.
// A records file cut, replaced or rewritten (another inode, a size under
// the kept end, or another hash of the 4 KB before it) is read again from
// 0. The kept file is trusted only when it and its folder are the user's
// and not writable by others, and its name is keyed by the binary (a new
// build reads records as it does), the zone's rules (a zone-less time is
// read in them) and the records' path.

const keepMagic = "swstamp1"

// keepHeader opens a kept file; its entries follow, Bytes of them.
type keepHeader struct {
	Magic    [8]byte
	Dev, Ino uint64
	End      int64    // the whole lines kept: [0, End)
	Tail     [32]byte // sha256 of the (up to) 4 KB before End
	Long     int64    // the lines too long in [0, End)
	N, Bytes int64    // entries, and their bytes
	Sum      uint32   // crc32c of the entries
}

var keepHeaderLen = int64(binary.Size(keepHeader{}))

// keeper is one Build's way to the kept stamps.
type keeper struct {
	dir string
	key string // the binary and the zone
}

// newKeeper is nil (nothing kept) when dir is "", or it is not the
// user's, or others may write it.
func newKeeper(dir string, loc *time.Location, now time.Time) *keeper {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil || !ownedByUser(dir) {
		return nil
	}
	prune(dir, now)
	return &keeper{dir: dir, key: binaryID() + "\x00" + loc.String() + "\x00" + zoneRules(loc) + "\x00" + os.Getenv("TZ")}
}

// zoneRules names loc by its rules: its offset and abbreviation each day
// of 1990 to 2040, hashed. The host's zone is "Local" whichever it is,
// and two zones may say the same now (America/Phoenix, and America/Denver
// in winter) but not of a zone-less time last summer. Fixed days, not
// ones around now: the name changes with the rules, not with the date.
func zoneRules(loc *time.Location) string {
	h := sha256.New()
	var b []byte
	for t := time.Date(1990, 1, 1, 12, 0, 0, 0, time.UTC); t.Year() < 2041; t = t.Add(24 * time.Hour) {
		name, off := t.In(loc).Zone()
		b = binary.AppendVarint(append(append(b[:0], name...), 0), int64(off))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// keptFor is how long kept stamps no digest used stay: a root reported on
// again after that is read whole once more.
const keptFor = 14 * 24 * time.Hour

// prune removes the kept stamps no digest used for keptFor (roots gone,
// binaries replaced), and temporary files a digest cut short left.
func prune(dir string, now time.Time) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		tmp := strings.HasPrefix(e.Name(), ".stamps-")
		if age := now.Sub(fi.ModTime()); tmp && age > time.Hour || strings.HasSuffix(e.Name(), ".stamps") && age > keptFor {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// binaryID names the running binary by its build (the Go build ID the
// linker writes in an ELF note: a hash of what went into it), so the host
// agent installed in the cache and the deployed synthwatch, one build
// copied to two paths, read each other's kept stamps (the agent keeps
// them for the report: remote/stampkeep.go); by its path, size and time
// where it has none.
var binaryID = sync.OnceValue(func() string {
	// the running binary, not the file at its path: an install or deploy
	// may have renamed another build over it since this agent started
	if id := goBuildID("/proc/self/exe"); id != "" {
		return "build\x00" + id
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if id := goBuildID(exe); id != "" {
		return "build\x00" + id
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return exe
	}
	return exe + "\x00" + strconv.FormatInt(fi.Size(), 10) + "\x00" + strconv.FormatInt(fi.ModTime().UnixNano(), 10)
})

// goBuildID is the ELF note ".note.go.buildid" of exe ("" none: not ELF,
// or built with an empty -buildid).
func goBuildID(exe string) string {
	f, err := elf.Open(exe)
	if err != nil {
		return ""
	}
	defer f.Close()
	sec := f.Section(".note.go.buildid")
	if sec == nil || sec.Size > 4096 {
		return ""
	}
	b, err := sec.Data()
	// the note: name size, desc size, type, "Go\x00\x00", then the ID
	if err != nil || len(b) <= 16 {
		return ""
	}
	return hex.EncodeToString(b[16:])
}

// ownedByUser: path is the user's, and neither group nor others may write it.
func ownedByUser(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && usersOwn(fi)
}

func usersOwn(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == uint32(os.Getuid()) && fi.Mode().Perm()&0o022 == 0 && fi.Mode().Type()&os.ModeSymlink == 0
}

// openOwn opens path, a regular file and not through a symlink (a FIFO
// is refused, not waited on), when the file it opened (not whatever has
// the name a moment later) is the user's and others may not write it.
func openOwn(path string) *os.File {
	f, err := parse.OpenRegularFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil
	}
	if fi, err := f.Stat(); err != nil || !usersOwn(fi) {
		f.Close()
		return nil
	}
	return f
}

func (k *keeper) file(records string) string {
	abs, err := filepath.Abs(records)
	if err != nil {
		abs = records
	}
	h := sha256.Sum256([]byte(k.key + "\x00" + abs))
	return filepath.Join(k.dir, hex.EncodeToString(h[:20])+".stamps")
}

// kept is one records file's kept stamps as they are being used.
type kept struct {
	k    *keeper
	path string     // the kept file
	hdr  keepHeader // what was kept (zero: nothing)
	enc  stampCodec
	f    *os.File // the kept file, held from open to close: a rename over it changes nothing here
	data []byte   // its entries, once replayed
	add  []byte   // entries read since, encoded
	n    int64
	off  bool // stop keeping: an entry that does not encode
}

// open finds records' kept stamps, if they still hold for the file.
func (k *keeper) open(records string) *kept {
	if k == nil {
		return nil
	}
	kp := &kept{k: k, path: k.file(records)}
	f := openOwn(kp.path)
	if f == nil {
		return kp
	}
	var h keepHeader
	if binary.Read(f, binary.BigEndian, &h) != nil || string(h.Magic[:]) != keepMagic {
		f.Close()
		return kp
	}
	kp.hdr, kp.f = h, f
	return kp
}

// check lets the kept stamps go unless they still hold for rf, the
// records file as the digest opened it: checked, replayed and read on
// through one descriptor, so a file renamed over the records meanwhile is
// either read whole or not at all.
func (kp *kept) check(rf *os.File) {
	if kp != nil && kp.f != nil && !stillHolds(rf, kp.hdr) {
		kp.hdr = keepHeader{}
		kp.close()
	}
}

// close lets the kept file go.
func (kp *kept) close() {
	if kp != nil && kp.f != nil {
		kp.f.Close()
		kp.f = nil
	}
}

// stillHolds: the records file f is the one h kept, grown at most.
func stillHolds(f *os.File, h keepHeader) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && uint64(st.Dev) == h.Dev && st.Ino == h.Ino && fi.Size() >= h.End && tailHash(f, h.End) == h.Tail
}

func tailHash(f *os.File, end int64) [32]byte {
	n := min(end, 4096)
	b := make([]byte, n)
	if _, err := f.ReadAt(b, end-n); err != nil && !errors.Is(err, io.EOF) {
		return [32]byte{}
	}
	return sha256.Sum256(b)
}

// maxKeptBytes bounds the kept entries held in memory, those read and
// those added (about 8 bytes a record: some 30 GB of records; but a byte
// a blank line): more are neither replayed nor kept.
var maxKeptBytes int64 = 256 << 20

// replay gives fn the kept stamps in order, once they are checked whole
// (their sum, then every entry decoded): the end they reach, and the long
// lines before it. Nothing kept, or a kept file that does not check: 0, 0,
// and fn was not called.
func (kp *kept) replay(fn func(lineStamp)) (end int64, long int) {
	if kp == nil || kp.f == nil {
		return 0, 0
	}
	if !kp.load() || kp.each(nil) != nil {
		kp.hdr, kp.enc, kp.data = keepHeader{}, stampCodec{}, nil
		kp.close()
		return 0, 0
	}
	kp.enc = stampCodec{}
	kp.each(fn) // decoded whole just now: it cannot fail
	return kp.hdr.End, int(kp.hdr.Long)
}

// load reads the kept entries and checks their sum.
func (kp *kept) load() bool {
	if kp.hdr.Bytes < 0 || kp.hdr.Bytes > maxKeptBytes {
		return false
	}
	kp.data = make([]byte, kp.hdr.Bytes)
	n, err := kp.f.ReadAt(kp.data, keepHeaderLen)
	return int64(n) == kp.hdr.Bytes && (err == nil || errors.Is(err, io.EOF)) && crc32.Checksum(kp.data, castagnoli) == kp.hdr.Sum
}

// each decodes the kept entries, to fn when it is not nil.
func (kp *kept) each(fn func(lineStamp)) error {
	r := keptReader{b: kp.data}
	for i := int64(0); i < kp.hdr.N; i++ {
		ls, err := kp.enc.decode(&r)
		if err != nil {
			return err
		}
		if fn != nil {
			fn(ls)
		}
	}
	if r.i != len(r.b) {
		return errKeptCorrupt
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// note keeps a whole line's stamp read from the file.
func (kp *kept) note(ls lineStamp) {
	if kp == nil || kp.off {
		return
	}
	var ok bool
	if kp.add, ok = kp.enc.encode(kp.add, ls); !ok || kp.hdr.Bytes+int64(len(kp.add)) > maxKeptBytes {
		kp.off, kp.add = true, nil
		return
	}
	kp.n++
}

// save writes the kept stamps up to end (the whole lines read from rf,
// the records file they were read from, not whatever has its name now),
// with the long lines among them: the old entries, then the new, to a
// temporary file renamed over the old one. Nothing new: nothing written.
func (kp *kept) save(rf *os.File, end int64, long int) {
	if kp == nil || kp.off {
		return
	}
	if end <= kp.hdr.End && kp.n == 0 {
		if kp.hdr.End > 0 { // used: prune keeps what a digest used within keptFor
			now := time.Now()
			os.Chtimes(kp.path, now, now)
		}
		return
	}
	fi, err := rf.Stat()
	if err != nil {
		return
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	h := keepHeader{Dev: uint64(st.Dev), Ino: st.Ino, End: end, Tail: tailHash(rf, end), Long: kp.hdr.Long + int64(long),
		N: kp.hdr.N + kp.n, Bytes: kp.hdr.Bytes + int64(len(kp.add))}
	copy(h.Magic[:], keepMagic)
	tmp, err := os.CreateTemp(kp.k.dir, ".stamps-*")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name()) // gone once renamed
	crc := crc32.New(castagnoli)
	w := bufio.NewWriterSize(io.MultiWriter(tmp, crc), 1<<20)
	if _, err := tmp.Seek(keepHeaderLen, io.SeekStart); err != nil {
		tmp.Close()
		return
	}
	w.Write(kp.data) // the old entries, checked by replay
	w.Write(kp.add)
	if w.Flush() != nil {
		tmp.Close()
		return
	}
	h.Sum = crc.Sum32()
	if flushHeader(tmp, h) != nil {
		tmp.Close()
		return
	}
	if tmp.Close() == nil {
		os.Rename(tmp.Name(), kp.path)
	}
}

func flushHeader(f *os.File, h keepHeader) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return binary.Write(f, binary.BigEndian, h)
}

// KeepStamps keeps in dir the stamps of the records files named, as a
// report's digest keeps them (Options.Keep), each read from where its
// kept stamps end: the host agent calls it for the records it sums, so
// that a report after a night's dashboard reads only what is newer. It
// judges nothing and returns the bytes it read.
func KeepStamps(records []string, dir string, loc *time.Location) int64 {
	k := newKeeper(dir, loc, time.Now())
	if k == nil {
		return 0
	}
	var read int64
	for _, p := range records {
		n, _, _, _ := eachStamp(p, loc, k.open(p), func(lineStamp) {})
		read += n
	}
	return read
}
