data "ferry_policies" "root" {
  compartment_id = var.tenancy_id
  name           = "Tenant Admin Policy" # optional
}
