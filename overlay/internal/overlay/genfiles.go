package overlay

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// kcacheGateType is the type of the gate constants in kcache's features.go.
const kcacheGateType = "featureName"

// clientGoGateType is the type of the gate constants in client-go's
// features package.
const clientGoGateType = "Feature"

// gateConst is one feature gate constant: its Go name and the gate's name.
type gateConst struct {
	ident string
	gate  string
}

// stringConsts returns the constants of the named type declared in the
// non-test Go files of dir (or only in file, if not empty), with their
// string values, sorted by identifier.
func stringConsts(dir, file, typeName string) ([]gateConst, error) {
	files := []string{file}
	if file == "" {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		files = files[:0]
		for _, e := range entries {
			if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
				files = append(files, n)
			}
		}
	}
	var out []gateConst
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != typeName || len(vs.Values) != len(vs.Names) {
					continue
				}
				for i, n := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						return nil, fmt.Errorf("%s: constant %s is not a string literal", name, n.Name)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						return nil, err
					}
					out = append(out, gateConst{ident: n.Name, gate: v})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ident < out[j].ident })
	return out, nil
}

// featuresFile generates the overlay's features.go: the same gate constant
// names kcache's package uses, bound to client-go's constants, and a
// featureEnabled that asks client-go's current feature gates. A gate kcache
// reads that this client-go release does not define is always off (the
// release predates it, and behaves as with it off).
func featuresFile(kcacheDir, clientGoFeaturesDir, head string) ([]byte, error) {
	ours, err := stringConsts(kcacheDir, "features.go", kcacheGateType)
	if err != nil {
		return nil, fmt.Errorf("reading kcache's gates: %w", err)
	}
	if len(ours) == 0 {
		return nil, fmt.Errorf("reading kcache's gates: no %s constants in features.go", kcacheGateType)
	}
	theirs, err := stringConsts(clientGoFeaturesDir, "", clientGoGateType)
	if err != nil {
		return nil, fmt.Errorf("reading client-go's gates: %w", err)
	}
	byGate := make(map[string]string, len(theirs))
	for _, c := range theirs {
		byGate[c.gate] = c.ident
	}
	var b bytes.Buffer
	b.WriteString(head)
	b.WriteString(`package cache

import clientgofeatures "k8s.io/client-go/features"

// featureName is a client-go feature gate. In this overlay kcache reads its
// gates from client-go's own registry, so features.ReplaceFeatureGates,
// component-base's --feature-gates flag and client-go's test helpers that
// switch gates all reach this package; with the default registry the gates
// still come from KUBE_FEATURE_<name> variables.
type featureName = clientgofeatures.Feature

// The gates this package reads, under the names the rest of the package
// uses.
const (
`)
	var absent []string
	for _, c := range ours {
		cg, ok := byGate[c.gate]
		if !ok {
			fmt.Fprintf(&b, "\t%s featureName = %q // not a gate of this client-go release: always off\n", c.ident, c.gate)
			absent = append(absent, c.ident)
			continue
		}
		fmt.Fprintf(&b, "\t%s = clientgofeatures.%s\n", c.ident, cg)
	}
	b.WriteString(`)

// featureEnabled reports whether the named gate is on in client-go's
// current feature gates.
func featureEnabled(name featureName) bool {
`)
	if len(absent) > 0 {
		fmt.Fprintf(&b, `	switch name {
	case %s:
		// This release does not have these gates; it behaves as with
		// them off, and its registry would reject the names.
		return false
	}
`, strings.Join(absent, ", "))
	}
	b.WriteString(`	return clientgofeatures.FeatureGates().Enabled(name)
}
`)
	return formatGenerated("features.go", b.Bytes())
}

// getterFile generates the overlay's getter.go: client-go's Getter
// interface and the requester the rest of the package sends list and
// watch requests through, calling the request builder directly instead of
// by reflection.
func getterFile(head string) ([]byte, error) {
	return formatGenerated("getter.go", []byte(head+getterSource))
}

const getterSource = `package cache

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	restclient "k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Getter is the REST client through which a ListWatch made by
// NewListWatchFromClient or NewFilteredListWatchFromClient sends its
// requests: a *rest.RESTClient, a rest.Interface, or the RESTClient() of a
// typed clientset group. In this overlay it is client-go's own interface.
type Getter interface {
	Get() *restclient.Request
}

// errNilGetter is returned by every request of a ListWatch built from a
// nil Getter.
var errNilGetter = errors.New("invalid Getter: the client is nil")

// restRequester sends list and watch requests through a Getter: Get, then
// Namespace, Resource and the options encoded by metav1.ParameterCodec,
// then Do(ctx).Get() or Watch(ctx). It is immutable.
type restRequester struct {
	client Getter
}

// newRESTRequester wraps c. A nil c is logged once here and makes every
// request fail instead of panicking.
func newRESTRequester(c Getter) *restRequester {
	if c == nil {
		klog.Background().Error(errNilGetter, "ListWatch built from a nil client; its List and Watch will fail")
	}
	return &restRequester{client: c}
}

// list performs a LIST of resource in namespace (all namespaces when
// empty), returning the client's own errors unchanged.
func (r *restRequester) list(ctx context.Context, namespace, resource string, options *metav1.ListOptions) (obj runtime.Object, err error) {
	defer recoverToError(&err, "listing "+resource)
	req, err := r.request(namespace, resource, options)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", resource, err)
	}
	return req.Do(ctx).Get()
}

// watch starts a WATCH of resource in namespace (all namespaces when
// empty), returning the client's own errors unchanged.
func (r *restRequester) watch(ctx context.Context, namespace, resource string, options *metav1.ListOptions) (w watch.Interface, err error) {
	defer recoverToError(&err, "watching "+resource)
	req, err := r.request(namespace, resource, options)
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", resource, err)
	}
	return req.Watch(ctx)
}

// request builds the request up to and including its query parameters.
func (r *restRequester) request(namespace, resource string, options *metav1.ListOptions) (*restclient.Request, error) {
	if r.client == nil {
		return nil, errNilGetter
	}
	req := r.client.Get()
	if req == nil {
		return nil, fmt.Errorf("invalid Getter: %T returned a nil request", r.client)
	}
	return req.Namespace(namespace).Resource(resource).VersionedParams(options, metav1.ParameterCodec), nil
}

// recoverToError turns a panic raised inside the client into an error
// naming the operation, as the standalone package does.
func recoverToError(err *error, operation string) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%s: client panicked: %v", operation, p)
	}
}
`

// formatGenerated gofmts a generated file, so a template mistake shows up
// as an error here rather than as a broken overlay.
func formatGenerated(name string, src []byte) ([]byte, error) {
	out, err := format.Source(src)
	if err != nil {
		return nil, fmt.Errorf("generating %s: %w", name, err)
	}
	return out, nil
}
