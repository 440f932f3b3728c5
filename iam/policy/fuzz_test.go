package policy

import (
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzParse checks that no input panics the parser, that every error is an *Error pointing inside the statement
// (or just past its end), and that every accepted statement survives a round trip through its canonical form.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"Allow group Administrators to manage all-resources in tenancy",
		"allow group 'Queue Admins', group B to use queue-push in compartment A:B:C",
		"Allow any-user to read queues in compartment id " + compartmentOCID,
		"Allow any-user to use queue-pull in tenancy where any {all {target.queue.id = 'q', request.operation != \"x\"}, target.queue.name = 'n'}",
		"Allow group 'unterminated to read queues in tenancy",
		"Deny group A to read queues in tenancy",
		"Allow any-user to read queues in tenancy where all{any{all{any{all{target.queue.id='q'}}}}}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(text)
		if err != nil {
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("error %v is not an *Error", err)
			}
			if perr.Column < 1 || perr.Column > utf8.RuneCountInString(text)+1 {
				t.Fatalf("column %d outside statement of %d characters: %v", perr.Column, utf8.RuneCountInString(text), err)
			}
			return
		}
		if s.Condition.Depth() > MaxConditionDepth {
			t.Fatalf("accepted a condition %d levels deep", s.Condition.Depth())
		}
		again, err := Parse(s.String())
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", s.String(), text, err)
		}
		if again.String() != s.String() || !again.Condition.Equal(s.Condition) {
			t.Fatalf("round trip changed %q into %q", s.String(), again.String())
		}
	})
}
