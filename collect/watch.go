package collect

import (
	"io/fs"
	"log/slog"
	"path/filepath"

	"github.com/fsnotify/fsnotify"
)

// watcher wakes the collector when a watched directory changes. fsnotify
// watches one directory, not a tree, so every directory under the roots is
// added as it appears. Without it (no inotify, a watch limit reached) the
// collector still polls.
type watcher struct {
	w       *fsnotify.Watcher
	events  chan struct{} // one pending wake-up at most
	watched map[string]bool
	log     *slog.Logger
	done    chan struct{}
}

// newWatcher starts watching; with notify false it never wakes anyone.
func newWatcher(log *slog.Logger, notify bool) *watcher {
	w := &watcher{events: make(chan struct{}, 1), watched: map[string]bool{}, log: log, done: make(chan struct{})}
	if !notify {
		close(w.done)
		return w
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		log.Warn("no file notifications: polling only", "err", err)
		close(w.done)
		return w
	}
	w.w = fw
	go w.loop()
	return w
}

func (w *watcher) loop() {
	defer close(w.done)
	for {
		select {
		case _, ok := <-w.w.Events:
			if !ok {
				return
			}
			select {
			case w.events <- struct{}{}:
			default:
			}
		case err, ok := <-w.w.Errors:
			if !ok {
				return
			}
			w.log.Warn("file notifications", "err", err)
		}
	}
}

// watch adds every directory under roots not watched yet (and the roots'
// parents, so a root created later is seen).
func (w *watcher) watch(roots []string) {
	if w.w == nil {
		return
	}
	for _, root := range roots {
		w.add(filepath.Dir(root))
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error { //nolint:errcheck // best effort: polling covers the rest
			if err == nil && d.IsDir() {
				w.add(path)
			}
			return nil
		})
	}
}

// watchDir watches dir itself (not what is under it, nor its parent), once
// it exists; "" is none.
func (w *watcher) watchDir(dir string) {
	if w.w != nil && dir != "" {
		w.add(dir)
	}
}

func (w *watcher) add(dir string) {
	if w.watched[dir] {
		return
	}
	if err := w.w.Add(dir); err == nil {
		w.watched[dir] = true
	}
}

func (w *watcher) close() {
	if w.w != nil {
		w.w.Close()
	}
	<-w.done
}
