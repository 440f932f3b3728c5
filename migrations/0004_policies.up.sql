-- IAM policies (DESIGN section 5): OCI-style statements, parsed and checked when written, evaluated by OPA.

CREATE TABLE policies (
    tenancy_id      text NOT NULL REFERENCES tenancies (id),
    id              text NOT NULL CHECK (length(id) BETWEEN 1 AND 255),
    compartment_id  text NOT NULL,
    name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    description     text NOT NULL DEFAULT '' CHECK (length(description) <= 400),
    statements      text[] NOT NULL CHECK (cardinality(statements) BETWEEN 1 AND 100),
    lifecycle_state text NOT NULL DEFAULT 'ACTIVE'
        CHECK (lifecycle_state IN ('CREATING', 'ACTIVE', 'UPDATING', 'DELETING', 'DELETED', 'FAILED')),
    freeform_tags   jsonb NOT NULL DEFAULT '{}',
    version         bigint NOT NULL DEFAULT 1,
    time_created    timestamptz NOT NULL DEFAULT now(),
    time_updated    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenancy_id, id),
    FOREIGN KEY (tenancy_id, compartment_id) REFERENCES compartments (tenancy_id, id)
);

-- Policy names are unique in a tenancy (case-insensitive) among live policies.
CREATE UNIQUE INDEX policies_name ON policies (tenancy_id, lower(name)) WHERE lifecycle_state <> 'DELETED';
-- Policies of a compartment, in list order.
CREATE INDEX policies_by_compartment ON policies (tenancy_id, compartment_id, time_created, id);

-- Tenancies created before this migration get their Tenant Admin Policy too.
INSERT INTO policies (tenancy_id, id, compartment_id, name, description, statements)
SELECT t.id, 'ocid1.policy.' || split_part(t.id, '.', 3) || '.' || split_part(t.id, '.', 4) || '.' ||
        translate(encode(sha256(convert_to(t.id, 'UTF8')), 'hex'), '0189', 'wxyz'),
    t.id, 'Tenant Admin Policy', 'Administrators manage everything in the tenancy.',
    ARRAY['Allow group Administrators to manage all-resources in tenancy']
FROM tenancies t
ON CONFLICT DO NOTHING;
