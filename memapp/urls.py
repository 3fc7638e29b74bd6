from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("memapp.web.urls")),
    path("", include("memapp.api.urls")),  # last: it ends with the API's catch-all 404
]
