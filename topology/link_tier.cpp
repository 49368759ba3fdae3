// placeholder: replaced by the module owner
namespace trident {}
