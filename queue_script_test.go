package cache

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	v1 "k8s.io/api/core/v1"
)

// The queue scripts in testdata/deltafifo and testdata/realfifo drive a
// queue through its exported API and print what it hands out. Objects are
// written name@rv (a Pod "ns/name" at that resourceVersion), ~name@rv (the
// tombstone a queue makes for it) or ~name (a tombstone without an object).
//
// Commands:
//
//	new [replaced] [atomic] [known=(a@1,...)] [failing=(a,...)] [vanished=(a,...)]
//	                          a fresh queue. A DeltaFIFO has KnownObjects only if
//	                          one of the key options is given; replaced sets
//	                          EmitDeltaTypeReplaced. A RealFIFO always has them,
//	                          unless atomic: AtomicEvents with bookmarks.
//	add|update|delete OBJ     the Queue method of that name
//	replace [OBJ...]          Replace with that list at resourceVersion 7
//	resync                    Resync
//	bookmark rv=N             RealFIFO.Bookmark (realfifo only)
//	pop                       pop one entry and print it
//	drain                     close the queue and print every entry left
//
// Run with -rewrite to regenerate the expected output.

func TestDeltaFIFOScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/deltafifo", func(t *testing.T, path string) {
		runQueueScript(t, path, func(d *datadriven.TestData, known KeyListerGetter) Queue {
			return NewDeltaFIFOWithOptions(DeltaFIFOOptions{
				KnownObjects:          known,
				EmitDeltaTypeReplaced: d.HasArg("replaced"),
			})
		})
	})
}

func TestRealFIFOScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/realfifo", func(t *testing.T, path string) {
		runQueueScript(t, path, func(d *datadriven.TestData, known KeyListerGetter) Queue {
			if d.HasArg("atomic") {
				return NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, EmitDeltaTypeBookmark: true})
			}
			if known == nil {
				known = newFakeKnown()
			}
			return NewRealFIFOWithOptions(RealFIFOOptions{KnownObjects: known})
		})
	})
}

// runQueueScript runs the script at path against queues made by newQueue.
func runQueueScript(t *testing.T, path string, newQueue func(*datadriven.TestData, KeyListerGetter) Queue) {
	var q Queue
	datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "new" && q == nil {
			d.Fatalf(t, "%s before new", d.Cmd)
		}
		switch d.Cmd {
		case "new":
			q = newQueue(d, scriptKnown(t, d))
			return "ok\n"
		case "add", "update", "delete":
			return scriptResult(scriptMutate(t, d, q))
		case "replace":
			return scriptResult(q.Replace(scriptObjs(t, d), "7"))
		case "resync":
			return scriptResult(q.Resync())
		case "bookmark":
			var rv string
			d.ScanArgs(t, "rv", &rv)
			return scriptResult(q.(*RealFIFO).Bookmark(rv))
		case "pop":
			var out strings.Builder
			if _, err := q.Pop(func(obj interface{}, initial bool) error {
				out.WriteString(formatPopped(obj, initial))
				return nil
			}); err != nil {
				return fmt.Sprintf("error: %v\n", err)
			}
			return out.String()
		case "drain":
			var out strings.Builder
			for _, p := range drain(t, q) {
				out.WriteString(formatPopped(p.Obj, p.Initial))
			}
			if out.Len() == 0 {
				return "empty\n"
			}
			return out.String()
		default:
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		}
	})
}

// scriptMutate applies add, update or delete to its one object argument.
func scriptMutate(t *testing.T, d *datadriven.TestData, q Queue) error {
	list := scriptObjs(t, d)
	if len(list) != 1 {
		d.Fatalf(t, "%s takes one object, got %d", d.Cmd, len(list))
	}
	switch d.Cmd {
	case "add":
		return q.Add(list[0])
	case "update":
		return q.Update(list[0])
	default:
		return q.Delete(list[0])
	}
}

// scriptKnown builds the KnownObjects a new command asks for, or nil.
func scriptKnown(t *testing.T, d *datadriven.TestData) KeyListerGetter {
	if !d.HasArg("known") && !d.HasArg("failing") && !d.HasArg("vanished") {
		return nil
	}
	k := newFakeKnown()
	for _, arg := range d.CmdArgs {
		for _, v := range arg.Vals {
			switch arg.Key {
			case "known":
				p := scriptObj(t, v).(*v1.Pod)
				k.objs[podKey(p.Name)] = p
			case "failing":
				k.failing[podKey(v)] = true
			case "vanished":
				k.vanished[podKey(v)] = true
			}
		}
	}
	return k
}

// scriptObjs parses the command's bare arguments as objects.
func scriptObjs(t *testing.T, d *datadriven.TestData) []interface{} {
	list := []interface{}{}
	for _, arg := range d.CmdArgs {
		if len(arg.Vals) == 0 {
			list = append(list, scriptObj(t, arg.Key))
		}
	}
	return list
}

// scriptObj parses name@rv, ~name@rv or ~name.
func scriptObj(t *testing.T, s string) interface{} {
	if name, ok := strings.CutPrefix(s, "~"); ok {
		if !strings.Contains(name, "@") {
			return tombstone(name, nil)
		}
		return tombstone(strings.Split(name, "@")[0], scriptObj(t, name))
	}
	name, rv, ok := strings.Cut(s, "@")
	if !ok {
		t.Fatalf("object %q is not name@rv", s)
	}
	return queuePod(name, rv)
}

// formatObj is scriptObj's inverse.
func formatObj(obj interface{}) string {
	switch o := obj.(type) {
	case *v1.Pod:
		return o.Name + "@" + o.ResourceVersion
	case DeletedFinalStateUnknown:
		if o.Obj == nil {
			return "~" + strings.TrimPrefix(o.Key, "ns/")
		}
		return "~" + formatObj(o.Obj)
	default:
		return fmt.Sprintf("%T", obj)
	}
}

// formatPopped prints one popped entry as "Type obj, Type obj".
func formatPopped(obj interface{}, initial bool) string {
	ds, ok := obj.(Deltas)
	if !ok {
		return fmt.Sprintf("%T\n", obj)
	}
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%s %s", d.Type, formatObj(d.Object))
	}
	suffix := ""
	if initial {
		suffix = " (initial)"
	}
	return strings.Join(parts, ", ") + suffix + "\n"
}

// scriptResult prints ok or the error.
func scriptResult(err error) string {
	if err != nil {
		return fmt.Sprintf("error: %v\n", err)
	}
	return "ok\n"
}
