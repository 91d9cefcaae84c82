package prommetrics_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The exporter reads the outbox and the dispatcher's attempts through the core's types
// (reconcile.OutboxReader, reconcile.CommandObserver): a service that imports it for its
// metrics pulls neither the PostgreSQL adapters nor pgx.
func TestTheExporterImportsNoStoreAdapterNorPgx(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to list the package's imports: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/jackc/") || strings.HasPrefix(pkg, "github.com/reconcilekit/reconcile/adapters/pg") {
			t.Errorf("prommetrics imports %s", pkg)
		}
	}
}
