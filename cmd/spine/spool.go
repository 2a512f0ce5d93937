package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spinehq/spine/importer"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/streams"
)

// The spool (docs/run.md#the-spool): each spine run writes every envelope
// it makes to a file of its own in the spool directory, one JSON line
// each in the order made, before anything is sent; a sender delivers the
// file to spine from the offset spine took last (saved beside it, in
// FILE.sent), and the file goes once spine took all of it. So spine being
// unreachable or slow never blocks the app's output, and what a run could
// not deliver is delivered by a later spine run or spine spool, in order;
// ids are deterministic, so an envelope sent twice (no answer, then sent
// again) is stored once.

// defaultSpoolMax bounds the bytes waiting in the spool directory: the
// files earlier runs left, plus what this run wrote that spine has not
// taken yet (--spool-max). A run's own file is removed when spine took
// all of it.
const defaultSpoolMax = 512 << 20

// Deliveries post up to spoolBatch envelopes (spoolBatchBytes) a request.
const (
	spoolBatch      = 500
	spoolBatchBytes = 4 << 20
)

// spoolPause is the wait before a delivery asks spine again after
// client.do gave up on it (spine down longer than its retries).
var spoolPause = time.Second

// spoolDir is the spool directory: flag, else $SPINE_SPOOL_DIR, else
// spine/spool in the user's config directory.
func spoolDir(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if d := config.SpoolDir(); d != "" {
		return d, nil
	}
	base, err := config.Dir()
	if err != nil {
		return "", fmt.Errorf("no spool directory (%v): pass --spool DIR", err)
	}
	return filepath.Join(base, "spool"), nil
}

// spool is one run's spool file, written by the translation.
type spool struct {
	path string
	f    *os.File // appended to; locked (flock) while the run lives
	max  int64

	mu      sync.Mutex
	used    int64     // bytes waiting: the other files' (others), plus this run's not yet taken
	others  int64     // the other files' bytes, when last counted
	checked time.Time // when the directory was last counted (room)
	size    int64     // bytes in this run's file
	written int
	full    int // envelopes not written: the spool was full
	more    chan struct{}
}

// openSpool creates this run's spool file in dir, holding at most max
// bytes in the directory in all, for target (saved beside it, FILE.meta):
// only a delivery to the same target sends it. The file is made as
// NAME.jsonl.new and locked before it is NAME.jsonl, so no other process
// sees it unlocked (and delivers, then removes, it from under its run).
func openSpool(dir string, max int64, target spoolTarget) (*spool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("spool (pass --spool DIR or set SPINE_SPOOL_DIR for another): %w", err)
	}
	name := fmt.Sprintf("%s-%d.jsonl", time.Now().UTC().Format("20060102T150405.000000000Z"), os.Getpid())
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path+".new", os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spool (pass --spool DIR or set SPINE_SPOOL_DIR for another): %w", err)
	}
	if spoolOpening != nil {
		spoolOpening(path + ".new")
	}
	fail := func(err error) (*spool, error) {
		f.Close()
		_ = os.Remove(path + ".new")
		_ = os.Remove(path + ".meta")
		return nil, fmt.Errorf("spool: %s: %w", path, err)
	}
	if err := lockSpoolFile(f); err != nil {
		return fail(err)
	}
	meta, err := json.Marshal(target)
	if err != nil {
		return fail(err)
	}
	if err := writeFileAtomic(path+".meta", meta); err != nil {
		return fail(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		return fail(err)
	}
	used := spoolUsed(dir)
	return &spool{path: path, f: f, max: max, used: used, others: used, checked: time.Now(), more: make(chan struct{}, 1)}, nil
}

// spoolOpening, when set (tests), is called with the new spool file's
// path as soon as it is made, before it is locked.
var spoolOpening func(path string)

// spoolTarget is the spine and tenant a spool file is for (FILE.meta):
// the URL, the org and member the token names, and a hash of the token
// (never the token).
type spoolTarget struct {
	URL       string `json:"url"`
	Org       string `json:"org,omitempty"`
	Member    string `json:"member,omitempty"`
	TokenHash string `json:"tokenSha256,omitempty"`
}

// targetOf is the target api sends to; none when it is not a *client.
func targetOf(api importer.API) spoolTarget {
	c, ok := api.(*client)
	if !ok {
		return spoolTarget{}
	}
	sum := sha256.Sum256([]byte(c.token))
	t := spoolTarget{URL: c.base, TokenHash: hex.EncodeToString(sum[:])}
	// The token's claims as it says them (spine verifies them): a token
	// minted again for the same member, or a runner's of the member, is
	// for the same tenant.
	if parts := strings.Split(c.token, "."); len(parts) == 3 {
		if raw, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil {
			var claims struct{ Org, Member string }
			if json.Unmarshal(raw, &claims) == nil {
				t.Org, t.Member = claims.Org, claims.Member
			}
		}
	}
	return t
}

// admits: a file spooled for f may go to t: the same spine URL, and the
// same org and member (the same token when the token named none).
func (t spoolTarget) admits(f spoolTarget) bool {
	if t.URL != f.URL {
		return false
	}
	if t.Org != "" && f.Org != "" {
		return t.Org == f.Org && t.Member == f.Member
	}
	return t.TokenHash != "" && t.TokenHash == f.TokenHash
}

func (t spoolTarget) String() string {
	if t.Org != "" {
		return fmt.Sprintf("%s as %s/%s", t.URL, t.Org, t.Member)
	}
	return t.URL + " with another token"
}

// fileTarget is the target the spool file at path was spooled for; false
// when it has no FILE.meta (spooled by a spine before there was one).
func fileTarget(path string) (spoolTarget, bool) {
	var t spoolTarget
	b, err := os.ReadFile(path + ".meta")
	if err != nil || json.Unmarshal(b, &t) != nil {
		return t, false
	}
	return t, true
}

// spoolUsed is the bytes the spool files in dir hold.
func spoolUsed(dir string) int64 {
	var n int64
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// write appends one envelope; false when the spool is full (or the disk
// refused the write): the envelope is not recorded, and counted.
func (s *spool) write(e *streams.Envelope) bool {
	// Redacted on disk as spine keeps it: the spool holds no secret spine
	// would not (docs/run.md#the-spool).
	c := e.Redacted()
	c.Owner = nil // spine makes the token's member the owner
	data, err := c.Marshal()
	if err != nil {
		return false
	}
	data = append(data, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used+int64(len(data)) > s.max && !s.room(int64(len(data))) {
		s.full++
		return false
	}
	if _, err := s.f.Write(data); err != nil {
		// What the disk took of it (full, say) is cut back, so the next
		// line starts on a line of its own, not glued to a fragment.
		_ = s.f.Truncate(s.size)
		s.full++
		return false
	}
	s.used += int64(len(data))
	s.size += int64(len(data))
	s.written++
	select {
	case s.more <- struct{}{}:
	default:
	}
	return true
}

// compactBytes: once spine took all of a file this long, it is emptied,
// so a long run's file holds what waits, not its whole output.
const compactBytes = 1 << 20

// compact empties the file when spine took all of it (off, the delivery's
// offset, is its size) and it is compactBytes or more: the writer waits
// meanwhile. It says whether it did; the delivery then reads from 0.
// FILE.sent says 0 before the file is emptied: a crash (or a refused
// truncate) in between leaves the whole file to send again, which spine
// takes once (ids), never an offset past what is written after.
func (s *spool) compact(d *delivery) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.off != s.size || d.off < compactBytes || !d.done() {
		return false
	}
	if err := writeFileAtomic(d.path+".sent", []byte("0")); err != nil {
		return false // nothing changed
	}
	err := s.f.Truncate(0)
	if rerr := d.restart(); rerr != nil || err != nil {
		return false // FILE.sent and the delivery are at 0: the whole file goes again
	}
	s.size = 0
	return true
}

// spoolRecheck is how often, at most, a full spool counts its directory
// again: what other runs and spine spool freed since counts.
var spoolRecheck = time.Second

// room counts the directory again (at most every spoolRecheck) and says
// whether n bytes fit now: used is the bound's own, taken when the run
// opened its file, and other runs deliver and remove theirs meanwhile.
func (s *spool) room(n int64) bool {
	if time.Since(s.checked) < spoolRecheck {
		return false
	}
	s.checked = time.Now()
	own := s.used - s.others // this run's, not yet taken
	s.others = max(spoolUsed(filepath.Dir(s.path))-s.size, 0)
	s.used = s.others + own
	return s.used+n <= s.max
}

// took frees n bytes spine took of this run's file.
func (s *spool) took(n int64) {
	s.mu.Lock()
	s.used -= n
	s.mu.Unlock()
}

// close closes the file, unlocking it: a later run may deliver it. It is
// removed when delivered was all of it.
func (s *spool) close(delivered bool) {
	s.f.Close()
	if delivered {
		removeSpool(s.path)
	}
}

func removeSpool(path string) {
	_ = os.Remove(path)
	_ = os.Remove(path + ".sent")
	_ = os.Remove(path + ".meta")
	_ = os.Remove(path + ".refused")
}

// delivery sends one spool file to spine, in order, from the offset spine
// took last.
type delivery struct {
	api  importer.API
	path string
	took func(n int64) // told of the bytes spine took, when set
	r    *bufio.Reader
	f    *os.File
	off  int64    // bytes of the file spine took (or refused)
	part []byte   // the start of a line not yet whole
	next [][]byte // lines read, not yet taken
	bad  []byte   // a line that is no JSON, read after next: passed over once next is taken
	// seen, when set, is told each line spine took.
	seen func(line []byte)
	// leftover: an earlier run's file, whose writer is gone (claimDelivery),
	// so a line torn at its end will never be whole.
	leftover bool
	// what spine did with the envelopes
	taken    int
	refusals []importer.Refusal
	lost     int // lines that were no whole JSON (a torn write): passed over
}

// openDelivery opens path for sending, at its saved offset.
func openDelivery(api importer.API, path string) (*delivery, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return startDelivery(api, path, f)
}

// errBusy: another process delivers the file.
var errBusy = errors.New("delivered by another process")

// lockSpoolFile takes f's exclusive lock (flock) without waiting: the run
// writing a spool file, or the one process delivering it, holds it.
func lockSpoolFile(f *os.File) error {
	return spoolLockError(syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
}

// spoolLockError is errBusy for a lock another process holds, and says so
// for a file system without locks (ENOTSUP, EOPNOTSUPP; ENOLCK: an NFS
// mount without its lock daemon), as spine collect does for its state.
func spoolLockError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		return errBusy
	case errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOLCK):
		return fmt.Errorf("its file system does not support file locks (flock: %v; an NFS or SMB mount, say): "+
			"pass --spool DIR or set SPINE_SPOOL_DIR to a directory on a local disk", err)
	}
	return err
}

// claimDelivery opens a leftover file for sending, locked (flock) so that
// one process at a time delivers it: errBusy when another does, and
// os.ErrNotExist when it has just been delivered and removed.
func claimDelivery(api importer.API, path string) (*delivery, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if err := lockSpoolFile(f); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := os.Stat(path); err != nil { // removed by whoever held it before
		f.Close()
		return nil, err
	}
	d, err := startDelivery(api, path, f)
	if err == nil {
		d.leftover = true
	}
	return d, err
}

// startDelivery reads f, the spool file at path, from its saved offset.
func startDelivery(api importer.API, path string, f *os.File) (*delivery, error) {
	d := &delivery{api: api, path: path, f: f}
	if b, err := os.ReadFile(path + ".sent"); err == nil {
		d.off, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	if _, err := f.Seek(d.off, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	d.r = bufio.NewReaderSize(f, 1<<20)
	return d, nil
}

func (d *delivery) close() { d.f.Close() }

// restart reads the file from its start again (emptied by compact, which
// saved FILE.sent at 0).
func (d *delivery) restart() error {
	if _, err := d.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	d.r.Reset(d.f)
	d.off = 0
	return nil
}

// fill reads the whole lines written since, up to a batch. A line that
// is no JSON (a write torn before its fragment was cut back, by an earlier
// spine) is passed over, in its place in the order, and counted lost: one
// bad line must not make spine refuse the whole batch, and the file with
// it, for ever. So is a leftover's last line torn at the end.
func (d *delivery) fill() error {
	for {
		if len(d.next) == 0 && d.bad != nil {
			if err := d.passOver(); err != nil {
				return err
			}
		}
		if err := d.read(); err != nil || d.bad == nil || len(d.next) > 0 {
			return err
		}
	}
}

// read reads lines into next up to a batch, or to a bad one (d.bad).
func (d *delivery) read() error {
	size := 0
	for _, l := range d.next {
		size += len(l)
	}
	for len(d.next) < spoolBatch && size < spoolBatchBytes && d.bad == nil {
		b, err := d.r.ReadBytes('\n')
		if err == io.EOF {
			d.part = append(d.part, b...) // written in part so far, or nothing
			if d.leftover && len(d.part) > 0 {
				d.bad, d.part = d.part, nil // its writer is gone: never whole
			}
			return nil
		}
		if err != nil {
			return err
		}
		if len(d.part) > 0 {
			b, d.part = append(d.part, b...), nil
		}
		if !json.Valid(b) {
			d.bad = b
			return nil
		}
		d.next = append(d.next, b)
		size += len(b)
	}
	return nil
}

// passOver passes the bad line (d.bad) over, once every line before it
// was taken: it is counted lost, and the offset saved past it.
func (d *delivery) passOver() error {
	n := int64(len(d.bad))
	d.off += n
	d.lost++
	d.bad = nil
	if d.took != nil {
		d.took(n)
	}
	fmt.Fprintf(os.Stderr, "spine: %s: a line that is no whole JSON (a torn write) at byte %d: passed over, lost\n",
		filepath.Base(d.path), d.off-n)
	return writeFileAtomic(d.path+".sent", []byte(strconv.FormatInt(d.off, 10)))
}

// step posts the lines waiting, as one batch, and saves how far spine
// took them. It returns how many it posted (0: none waiting). An envelope
// spine refused (4xx) is passed over and told; one it could not store
// (5xx) is posted again next step, with those after it.
func (d *delivery) step(ctx context.Context) (int, error) {
	if err := d.fill(); err != nil || len(d.next) == 0 {
		return 0, err
	}
	body := make([]byte, 0, 1<<16)
	body = append(body, '[')
	for i, l := range d.next {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, l[:len(l)-1]...)
	}
	body = append(body, ']')
	var resp streams.IngestResponse
	if err := d.api.Do(ctx, http.MethodPost, "/v1/ingest", body, &resp); err != nil {
		return 0, err
	}
	took, refused := len(d.next), 0
	var unstored error
	var held *heldError
	for _, r := range resp.Results {
		switch {
		case heldStatus(r.Status):
			if r.Index < took {
				took, held = r.Index, &heldError{&apiError{Status: r.Status}, r.ID}
				if r.Error != nil {
					held.Code, held.Message = r.Error.Code, r.Error.Message
				}
			}
		case r.Status >= 500:
			if r.Index < took {
				took = r.Index
			}
			unstored = fmt.Errorf("spine could not store envelope %s (%d)", r.ID, r.Status)
		case r.Status != http.StatusAccepted && r.Index < took:
			ref := importer.Refusal{ID: r.ID}
			if r.Error != nil {
				ref.Code, ref.Reason = r.Error.Code, r.Error.Message
			}
			d.refusals = append(d.refusals, ref)
			refused++
		}
	}
	var bytes int64
	for _, l := range d.next[:took] {
		bytes += int64(len(l))
		if d.seen != nil {
			d.seen(l)
		}
	}
	d.off += bytes
	if d.took != nil {
		d.took(bytes)
	}
	d.taken += took - refused
	d.next = slices.Delete(d.next, 0, took)
	if err := writeFileAtomic(d.path+".sent", []byte(strconv.FormatInt(d.off, 10))); err != nil {
		return took, err
	}
	if held != nil {
		return took, held
	}
	return took, unstored
}

// heldStatus is a refusal for who sent the envelope, not for what it says
// (401, 403, 404, 409: this token may not write that session now, as a
// runner's token a task it no longer holds): the delivery stops at it and
// the file is kept, for one with a token that may (spine spool with the
// member's). A refusal of the envelope itself (400) is passed over.
func heldStatus(status int) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusConflict:
		return true
	}
	return false
}

// heldError is the envelope a delivery stopped at (heldStatus): spine's
// refusal, and the envelope's id.
type heldError struct {
	*apiError
	ID string
}

func (e *heldError) Error() string { return fmt.Sprintf("spine refused %s: %v", e.ID, e.apiError) }
func (e *heldError) Unwrap() error { return e.apiError }

// done: every line written so far was taken.
func (d *delivery) done() bool { return len(d.next) == 0 && len(d.part) == 0 && d.bad == nil }

// writeFileAtomic writes path whole: FILE.tmp, readable by the user alone
// (made so if an earlier FILE.tmp was left with another mode), renamed
// over it.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// spoolWaiting: an error after which the delivery waits and asks again
// (spine down or busy longer than client.do's retries, an envelope it
// could not store), rather than one that stops it (a refused token).
func spoolWaiting(err error) bool {
	var ae *apiError
	return transientErr(err) || errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests ||
		!errors.As(err, &ae) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// leftovers are the spool files in dir, oldest first (named by creation
// time). The running runs' own are among them: claimDelivery passes them
// over, as their runs hold them.
func leftovers(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	slices.Sort(files)
	return files
}

// leftoverResult is what sendLeftovers did: envelopes delivered, lines
// passed over as lost (no whole JSON), files left; others are the files
// spooled for another target, not sent.
type leftoverResult struct {
	delivered, lost int
	dropped         int // files refused for good (refusedForGood)
	left            []string
	others          []string
}

// sendLeftovers sends each spool file an earlier run left in dir, oldest
// first, and removes each spine took all of. Its result says how many
// envelopes it delivered, how many lines it passed over as lost and what
// is left undelivered.
//
// A file spine refused an envelope of for who sent it (heldError), or
// refused a request of as a whole (a 4xx but 401, 403 and 429: the batch
// itself, which asking again would not change), is kept and told, and the
// next file goes on: it is left, and err says why. Spine not answering, or
// refusing the token, stops it: the next files would fare the same.
//
// Only the files spooled for api's target go (FILE.meta: the same spine
// URL and member); unmarked says whether a file with no FILE.meta (spooled
// by an earlier spine, for nobody knows whom) goes too: spine spool, told
// the target by the user, sends it; spine run does not. seen, when set, is
// told each line spine took.
func sendLeftovers(ctx context.Context, api importer.API, dir string, unmarked bool, seen func([]byte)) (res leftoverResult, err error) {
	to := targetOf(api)
	files := leftovers(dir)
files:
	for i, path := range files {
		if t, ok := fileTarget(path); ok && !to.admits(t) || !ok && !unmarked {
			res.others = append(res.others, path) // another spine's or member's: never sent here
			continue
		}
		d, oerr := claimDelivery(api, path)
		if errors.Is(oerr, errBusy) || errors.Is(oerr, os.ErrNotExist) {
			continue // another process delivers it, or did
		}
		if oerr != nil {
			res.left = append(res.left, files[i:]...)
			return res, oerr
		}
		d.seen = seen
		for {
			n, serr := d.step(ctx)
			res.delivered += n
			if serr != nil {
				if !fileRefused(serr) {
					d.close()
					res.left = append(res.left, files[i:]...)
					return res, serr
				}
				if refusedForGood(path) {
					fmt.Fprintf(os.Stderr, "spine: %v: %s dropped: refused %d times over %s\n", serr, filepath.Base(path),
						maxRefusals, refusedFor)
					removeSpool(path)
					d.close()
					res.dropped++
					continue files
				}
				fmt.Fprintf(os.Stderr, "spine: %v: %s kept from there (spine spool --drop %s gives it up)\n", serr,
					filepath.Base(path), filepath.Base(path))
				d.close()
				res.left, err = append(res.left, path), serr
				continue files
			}
			if n == 0 {
				break
			}
		}
		res.lost += d.lost
		for _, r := range d.refusals {
			fmt.Fprintf(os.Stderr, "spine: spine refused %s from %s: %s: %s\n", r.ID, filepath.Base(path), r.Code, r.Reason)
		}
		if d.done() {
			removeSpool(path) // before the lock goes: nobody else sends it again
		}
		d.close()
	}
	return res, err
}

// A leftover spine refused (fileRefused) maxRefusals times, over
// refusedFor at least since the first, is dropped: an envelope refused
// for who sent it waits for a delivery with a token that may (spine spool
// with the member's), but not for ever.
var (
	maxRefusals = 10
	refusedFor  = 7 * 24 * time.Hour
)

// refusedForGood counts one more refusal of the file at path in
// FILE.refused (the first one's time and the count) and says whether it
// is to be dropped.
func refusedForGood(path string) bool {
	var r struct {
		First time.Time `json:"first"`
		Count int       `json:"count"`
	}
	if b, err := os.ReadFile(path + ".refused"); err != nil || json.Unmarshal(b, &r) != nil || r.First.IsZero() {
		r.First, r.Count = time.Now().UTC(), 0
	}
	r.Count++
	if r.Count >= maxRefusals && time.Since(r.First) >= refusedFor {
		return true
	}
	b, _ := json.Marshal(r)
	_ = writeFileAtomic(path+".refused", b)
	return false
}

// dropSpool is spine spool --drop NAME: the leftover file NAME in dir
// (with its FILE.sent, FILE.meta...) is removed unsent, unless a process
// holds it (a live run). It says how many lines it held.
func dropSpool(dir, name string) (int, error) {
	path := filepath.Join(dir, filepath.Base(name))
	if !strings.HasSuffix(path, ".jsonl") {
		return 0, usageError{fmt.Sprintf("--drop %s: want a spool file, NAME.jsonl (spine spool lists them)", name)}
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := lockSpoolFile(f); err != nil {
		return 0, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	lines := 0
	sc := bufio.NewReader(f)
	for {
		_, err := sc.ReadBytes('\n')
		if err != nil {
			break
		}
		lines++
	}
	removeSpool(path)
	return lines, nil
}

// fileRefused: spine refused what this file sends (an envelope for who
// sent it, or a batch of it as a whole), not this delivery's token or its
// reaching spine: the file is kept, and the next goes on.
func fileRefused(err error) bool {
	var held *heldError
	var ae *apiError
	if errors.As(err, &held) {
		return true
	}
	return errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 && ae.Status != http.StatusUnauthorized &&
		ae.Status != http.StatusForbidden && ae.Status != http.StatusTooManyRequests
}

// runSpool is `spine spool`: it delivers what earlier runs left in the
// spool and says what is left; exit 75 when something is.
func runSpool(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("spool", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: spine spool [flags]\n\nDelivers to spine the envelopes earlier spine runs left in the spool\n(spine unreachable or slow when they ended). See docs/run.md.")
		fs.PrintDefaults()
	}
	dirFlag := fs.String("spool", "", "the spool directory (default $SPINE_SPOOL_DIR, else spine/spool in the user's config directory)")
	urlFlag := fs.String("url", "", "spine HTTP API (default $SPINE_URL or http://127.0.0.1:7070)")
	token := fs.String("token", "", "bearer token (default $SPINE_TOKEN)")
	drop := fs.String("drop", "", "give up the spool `FILE` (NAME.jsonl, as spine spool names it): remove it unsent")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{"spool takes no arguments"}
	}
	dir, err := spoolDir(*dirFlag)
	if err != nil {
		return err
	}
	if *drop != "" {
		n, err := dropSpool(dir, *drop)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "dropped %s: %d envelopes not delivered\n", filepath.Base(*drop), n)
		return nil
	}
	c, err := newClient(*urlFlag, *token)
	if err != nil {
		return err
	}
	res, err := sendLeftovers(ctx, c, dir, true, nil)
	fmt.Fprintf(stdout, "delivered %d envelopes from %s\n", res.delivered, dir)
	for _, path := range res.others {
		t, _ := fileTarget(path)
		fmt.Fprintf(stdout, "kept %s: for %v (spine spool --url %s with a token of that member delivers it)\n",
			filepath.Base(path), t, t.URL)
	}
	if res.lost > 0 {
		fmt.Fprintf(os.Stderr, "spine spool: %d lines were no whole JSON (torn writes): passed over, lost\n", res.lost)
	}
	if len(res.left) > 0 {
		fmt.Fprintf(os.Stderr, "spine spool: %d spool files not delivered: %v\n", len(res.left), err)
		return appExit(notRecordedCode)
	}
	if res.dropped > 0 {
		fmt.Fprintf(os.Stderr, "spine spool: %d spool files dropped, refused %d times over %s: their envelopes are not delivered\n",
			res.dropped, maxRefusals, refusedFor)
	}
	if err == nil && res.lost+res.dropped > 0 {
		return appExit(notRecordedCode) // delivered what there was, not all that was written
	}
	return err
}
