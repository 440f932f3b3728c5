data "ferry_compartments" "top" {
  compartment_id = var.tenancy_id # the children of the root compartment
}

output "compartment_names" {
  value = data.ferry_compartments.top.compartments[*].name
}
