package cache

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
)

// The reflector scripts in testdata/reflector play the API server to a
// running Reflector and print what it asks for and what it does to its
// store. Objects are written name@rv (a Pod "ns/name" at that
// resourceVersion).
//
// Commands:
//
//	list rv=N [continue=T] [OBJ...]   the answer to the next list request
//	list-error expired|internal       the next list request fails so
//	run                               start the Reflector (RunWithContext)
//	                                  and wait until it watches
//	added|modified|deleted OBJ        send a watch event, wait for the store
//	bookmark rv=N                     send a bookmark, wait until it is seen
//	expire                            end the watch with 410 Gone and wait
//	                                  until the Reflector watches again
//	close                             end the watch cleanly, likewise
//
// After each command it prints the requests the server received (list
// with its resourceVersion, limit and continue token; watch with its
// resourceVersion) and the store calls, in order, since the last command.
//
// Run with -rewrite to regenerate the expected output.

func TestReflectorScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/reflector", func(t *testing.T, path string) {
		s := newReflectorScript()
		defer s.stop()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return s.do(t, d)
		})
	})
}

// reflectorScript is the scripted server, the recording store and the
// Reflector between them.
type reflectorScript struct {
	// mu guards lists, stream, log and watches.
	mu      sync.Mutex
	lists   []rfReply
	stream  *rfStream
	log     []string
	watches int
	// changed gets a token whenever log grows.
	changed chan struct{}

	store  *rfStore
	cancel context.CancelFunc
	done   chan struct{}
}

func newReflectorScript() *reflectorScript {
	return &reflectorScript{changed: make(chan struct{}, 1), store: newRFStore()}
}

func (s *reflectorScript) note(line string) {
	s.mu.Lock()
	s.log = append(s.log, line)
	s.mu.Unlock()
	s.signal()
}

// signal wakes a waitFor.
func (s *reflectorScript) signal() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// ListWithContext answers with the next scripted list, waiting for one.
func (s *reflectorScript) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	s.note(fmt.Sprintf("list rv=%q limit=%d continue=%q", opts.ResourceVersion, opts.Limit, opts.Continue))
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.lists) == 0 {
		return nil, apierrors.NewInternalError(fmt.Errorf("no list scripted"))
	}
	r := s.lists[0]
	s.lists = s.lists[1:]
	return r.obj, r.err
}

// WatchWithContext opens a stream the script sends events on.
func (s *reflectorScript) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	stream := newRFStream(false)
	s.mu.Lock()
	s.stream = stream
	s.watches++
	// Logged with the count, so that a script that saw the watch counted
	// also finds its line.
	s.log = append(s.log, fmt.Sprintf("watch rv=%q", opts.ResourceVersion))
	s.mu.Unlock()
	s.signal()
	return stream, nil
}

func (s *reflectorScript) List(opts metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), opts)
}

func (s *reflectorScript) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), opts)
}

func (s *reflectorScript) IsWatchListSemanticsUnSupported() bool { return true }

// scriptStoreLog is a store that tells the script about each call.
type scriptStoreLog struct {
	*rfStore
	s *reflectorScript
}

func (l scriptStoreLog) after(before int) {
	for _, op := range l.rfStore.recorded()[before:] {
		l.s.note("store " + op)
	}
}

func (l scriptStoreLog) Add(obj interface{}) error {
	return l.call(func() error { return l.rfStore.Add(obj) })
}
func (l scriptStoreLog) Update(obj interface{}) error {
	return l.call(func() error { return l.rfStore.Update(obj) })
}
func (l scriptStoreLog) Delete(obj interface{}) error {
	return l.call(func() error { return l.rfStore.Delete(obj) })
}
func (l scriptStoreLog) Replace(list []interface{}, rv string) error {
	return l.call(func() error { return l.rfStore.Replace(list, rv) })
}

func (l scriptStoreLog) Bookmark(rv string) error {
	l.s.note("store bookmark@" + rv)
	return nil
}

func (l scriptStoreLog) call(f func() error) error {
	before := len(l.rfStore.recorded())
	err := f()
	l.after(before)
	return err
}

func (s *reflectorScript) do(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "list":
		var rv, cont string
		d.ScanArgs(t, "rv", &rv)
		if d.HasArg("continue") {
			d.ScanArgs(t, "continue", &cont)
		}
		var pods []*v1.Pod
		for _, arg := range d.CmdArgs {
			if arg.Key != "rv" && arg.Key != "continue" {
				pods = append(pods, scriptPod(t, arg.Key))
			}
		}
		s.queueList(rfReply{obj: rfPodList(rv, cont, pods...)})
		return "ok\n"
	case "list-error":
		err := apierrors.NewInternalError(fmt.Errorf("scripted"))
		if d.CmdArgs[0].Key == "expired" {
			err = apierrors.NewResourceExpired("too old resource version")
		}
		s.queueList(rfReply{err: err})
		return "ok\n"
	case "run":
		s.run()
		s.waitFor(t, "a watch", s.watchCount(1))
	case "added", "modified", "deleted":
		before := s.logLen()
		s.send(watch.Event{Type: watch.EventType(strings.ToUpper(d.Cmd)), Object: scriptPod(t, d.CmdArgs[0].Key)})
		s.waitFor(t, "the store", func() bool { return s.logLen() > before })
	case "bookmark":
		var rv string
		d.ScanArgs(t, "rv", &rv)
		// The log's length is taken before the send: the reflector may
		// note the bookmark before this goroutine runs again.
		before := s.logLen()
		s.send(watch.Event{Type: watch.Bookmark, Object: &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}})
		s.waitFor(t, "the bookmark", func() bool { return s.logLen() > before })
	case "expire", "close":
		next := s.watchCount(s.watchesOpened() + 1)
		if d.Cmd == "expire" {
			s.send(rfStatusEvent(apierrors.NewResourceExpired("too old resource version")))
		} else {
			s.closeStream()
		}
		s.waitFor(t, "the next watch", next)
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	return s.take()
}

func (s *reflectorScript) run() {
	backoff := wait.Backoff{Duration: time.Millisecond, Cap: time.Millisecond, Steps: 1 << 30, Factor: 1}
	r := NewReflectorWithOptions(s, &v1.Pod{}, scriptStoreLog{rfStore: s.store, s: s}, ReflectorOptions{Name: "script", Backoff: &backoff})
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		r.RunWithContext(ctx)
	}()
}

func (s *reflectorScript) stop() {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
}

func (s *reflectorScript) queueList(r rfReply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists = append(s.lists, r)
}

func (s *reflectorScript) send(e watch.Event) {
	s.mu.Lock()
	stream := s.stream
	s.mu.Unlock()
	stream.send(e)
}

func (s *reflectorScript) closeStream() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.stream.ch)
}

func (s *reflectorScript) logLen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.log)
}

func (s *reflectorScript) watchesOpened() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watches
}

func (s *reflectorScript) watchCount(n int) func() bool {
	return func() bool { return s.watchesOpened() >= n }
}

// take returns what was logged since the last call, a line each.
func (s *reflectorScript) take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := strings.Join(s.log, "\n") + "\n"
	s.log = nil
	return out
}

// waitFor waits, without sleeping, until cond holds.
func (s *reflectorScript) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	expired := make(chan struct{})
	timer := time.AfterFunc(wait.ForeverTestTimeout, func() { close(expired) })
	defer timer.Stop()
	for !cond() {
		select {
		case <-s.changed:
		case <-expired:
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// scriptPod reads name@rv.
func scriptPod(t *testing.T, spec string) *v1.Pod {
	name, rv, ok := strings.Cut(spec, "@")
	if !ok {
		t.Fatalf("object %q is not name@rv", spec)
	}
	return rfPod(name, rv)
}
