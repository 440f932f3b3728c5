package policy

import (
	"strings"
)

// String renders s in canonical form: keywords in lower case after a leading "Allow", names quoted only where
// needed. Parsing the result yields s again (apart from Text), which the fuzz target checks; it is meant for logs
// and for normalizing statements, not for storage (store Text, which is what the user wrote).
func (s Statement) String() string {
	var b strings.Builder
	b.WriteString("Allow ")
	if s.Subject.AnyUser {
		b.WriteString("any-user")
	} else {
		for i, g := range s.Subject.Groups {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("group ")
			b.WriteString(quoteName(g, strings.EqualFold(g, "to")))
		}
	}
	b.WriteString(" to ")
	b.WriteString(s.Verb.String())
	b.WriteByte(' ')
	b.WriteString(string(s.ResourceType))
	b.WriteString(" in ")
	switch {
	case s.Location.Tenancy:
		b.WriteString("tenancy")
	case s.Location.ID != "":
		b.WriteString("compartment id ")
		b.WriteString(s.Location.ID)
	default:
		b.WriteString("compartment ")
		for i, name := range s.Location.Path {
			if i > 0 {
				b.WriteByte(':')
			}
			reserved := i == 0 && (strings.EqualFold(name, "where") || strings.EqualFold(name, "id"))
			b.WriteString(quoteName(name, reserved))
		}
	}
	if s.Condition != nil {
		b.WriteString(" where ")
		writeCondition(&b, s.Condition)
	}
	return b.String()
}

func writeCondition(b *strings.Builder, c *Condition) {
	switch c.Op {
	case OpAll, OpAny:
		b.WriteString(string(c.Op))
		b.WriteString(" {")
		for i, child := range c.Conditions {
			if i > 0 {
				b.WriteString(", ")
			}
			writeCondition(b, child)
		}
		b.WriteByte('}')
	default:
		b.WriteString(c.Variable)
		b.WriteByte(' ')
		b.WriteString(string(c.Op))
		b.WriteByte(' ')
		b.WriteString(quote(c.Value))
	}
}

// quoteName writes a name bare when the parser would read it back as the same name, quoted otherwise.
func quoteName(name string, reserved bool) string {
	if name == "" || reserved || strings.IndexFunc(name, func(r rune) bool { return !isWordRune(r) }) >= 0 {
		return quote(name)
	}
	return name
}

// quote prefers single quotes and falls back to double quotes for values containing a single quote. A value
// containing both cannot be written in the grammar (there are no escapes), so the parser never produces one.
func quote(v string) string {
	if strings.ContainsRune(v, '\'') {
		return `"` + v + `"`
	}
	return "'" + v + "'"
}
