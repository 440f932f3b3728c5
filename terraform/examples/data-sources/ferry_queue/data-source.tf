data "ferry_queue" "orders" {
  id = "ocid1.queue.ferry.local.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
}

output "orders_endpoint" {
  value = data.ferry_queue.orders.messages_endpoint
}
