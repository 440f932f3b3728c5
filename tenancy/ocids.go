package tenancy

import (
	"crypto/rand"
	"encoding/base32"
	"regexp"
	"strings"
)

// Resource types that have OCIDs (DESIGN section 3).
const (
	TypeTenancy       = "tenancy"
	TypeCompartment   = "compartment"
	TypeQueue         = "queue"
	TypeConsumerGroup = "consumergroup"
	TypePolicy        = "policy"
	TypeWorkRequest   = "workrequest"
)

// RealmDefault and RegionDefault apply when the configuration names none.
const (
	RealmDefault  = "ferry"
	RegionDefault = "local"
)

var (
	ocidPattern = regexp.MustCompile(`^ocid1\.([a-z]+)\.[a-z0-9-]+\.[a-z0-9-]*\.[a-z2-7]{32,}$`)
	lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)
)

// OCIDs mints identifiers for one realm and region.
type OCIDs struct {
	Realm  string
	Region string
}

// New returns a fresh OCID of the given type: ocid1.<type>.<realm>.<region>.<32 base32 characters from a CSPRNG>.
func (o OCIDs) New(resourceType string) string {
	var b [20]byte // 160 bits → exactly 32 base32 characters
	_, _ = rand.Read(b[:])
	return "ocid1." + resourceType + "." + o.Realm + "." + o.Region + "." + lowerBase32.EncodeToString(b[:])
}

// TypeOf returns the resource type of a well-formed OCID, or "" when s is not one.
func TypeOf(s string) string {
	m := ocidPattern.FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return m[1]
}

// IsOCID reports whether s is a well-formed OCID of the given type.
func IsOCID(s, resourceType string) bool { return TypeOf(s) == resourceType }

// Short shortens an OCID for log lines.
func Short(s string) string {
	if i := strings.LastIndexByte(s, '.'); i >= 0 && len(s)-i > 9 {
		return s[:i+9] + "…"
	}
	return s
}
