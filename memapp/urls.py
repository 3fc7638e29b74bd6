from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path

from memapp import views

urlpatterns = [
    path("", views.home, name="home"),
    path("rescan/", views.rescan, name="rescan"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
