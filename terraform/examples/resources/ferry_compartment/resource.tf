resource "ferry_compartment" "orders" {
  compartment_id = var.tenancy_id # the root compartment's OCID is the tenancy's
  name           = "orders"
  description    = "The order pipeline's queues"
  freeform_tags  = { team = "orders" }
}
