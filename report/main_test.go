package report

import (
	"testing"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }
